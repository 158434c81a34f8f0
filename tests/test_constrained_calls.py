"""Constrained tool calls on the real packaged models, through real servers and the official
``openai`` client: one valid call per reply when asked, never an invented or echoed one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import openai
import pytest

from evals.tasks import load_tasks
from harness.client import ProviderClient
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.workspace import Workspace
from serve_local.backends.llama import LlamaBackend
from serve_local.backends.transformers import TransformersBackend
from serve_local.callshape import call_spans
from serve_local.models import QWEN_CODER, SMOLLM2, resolve
from serve_local.toolcalls import SCHEMA_KEYWORDS
from tests.helpers import record_of
from tests.models_fixtures import model_server

TOOLS = [t.spec() for t in default_tools()]
SCHEMAS = {t.name: t.parameters for t in default_tools()}
# The questions of the eval's task set; the server never sees them as anything but user text.
SIX = [task.question for task in load_tasks().tasks]


@pytest.fixture(scope="module")
def lazy() -> Iterator[str]:
    with model_server(LlamaBackend(resolve(QWEN_CODER), n_ctx=4096)) as url:
        yield url


@pytest.fixture(scope="module")
def client(lazy: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=lazy, api_key="unused", max_retries=0, timeout=300)


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/chat/completions", json=body, timeout=300)


def messages(question: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def valid_calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    """The message's calls, each checked against its tool's schema with jsonschema."""
    out = []
    for call in message.tool_calls or []:
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, SCHEMAS[call.function.name])
        out.append((call.function.name, args))
    return out


def test_models_shows_the_grammar_mode(lazy: str) -> None:
    (entry,) = httpx.get(f"{lazy}/models").json()["data"]
    assert entry["tool_grammar"] == "lazy"


@pytest.mark.parametrize("question", SIX)
def test_required_gives_exactly_one_valid_call(client: openai.OpenAI, question: str) -> None:
    completion = client.chat.completions.create(
        model="m",
        messages=messages(question),  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        tool_choice="required",
        parallel_tool_calls=False,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert len(valid_calls(choice.message)) == 1


def test_parallel_false_never_carries_two_calls(client: openai.OpenAI) -> None:
    counts = []
    for question in SIX:
        for choice in ("auto", "required"):
            completion = client.chat.completions.create(
                model="m",
                messages=messages(question),  # type: ignore[arg-type]
                tools=TOOLS,  # type: ignore[arg-type]
                tool_choice=choice,  # type: ignore[arg-type]
                parallel_tool_calls=False,
            )
            counts.append(len(valid_calls(completion.choices[0].message)))
    assert max(counts) == 1 and counts.count(1) >= len(SIX)


def test_a_named_function_is_the_only_call(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="m",
        messages=messages("How many files are there?"),  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        tool_choice={"type": "function", "function": {"name": "read_file"}},
    )
    calls = valid_calls(completion.choices[0].message)
    assert calls and {name for name, _ in calls} == {"read_file"}


def test_a_constrained_call_streams_as_deltas_the_client_assembles(client: openai.OpenAI) -> None:
    request: dict[str, Any] = {
        "model": "m",
        "messages": messages("Which file mentions a timeout?"),
        "tools": TOOLS,
        "tool_choice": "required",
    }
    whole = client.chat.completions.create(**request).choices[0].message
    with client.chat.completions.stream(**request) as stream:
        pieces = [
            e.arguments_delta for e in stream if e.type == "tool_calls.function.arguments.delta"
        ]
        final = stream.get_final_completion().choices[0]
    assert final.finish_reason == "tool_calls"
    assert valid_calls(final.message) == valid_calls(whole)
    # The head (id, name) came first with empty arguments; the arguments followed.
    (call,) = final.message.tool_calls or []
    assert pieces and "".join(pieces) == call.function.arguments


def test_prose_then_a_call_streams_as_the_whole_reply_does(client: openai.OpenAI) -> None:
    """The model writes a sentence, then a bare call (no tag, not at the start, so the grammar's
    trigger does not fire): streamed, the reply carries the same content and the call once,
    never the call's text as content too."""
    request: dict[str, Any] = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": "Repeat this line exactly, nothing else: Reading it now. "
                '{"name": "list_files", "arguments": {}}',
            }
        ],
        "tools": TOOLS,
        "max_tokens": 60,
    }
    whole = client.chat.completions.create(**request).choices[0].message
    assert whole.content and whole.tool_calls, "the model no longer writes prose then a call"
    # Another prompt between the two, so the second is evaluated as the first was (the KV
    # cache would otherwise hold all of it, and llama.cpp's sums depend on the batches).
    client.chat.completions.create(model="m", messages=messages("Hi"), max_tokens=2)  # type: ignore[arg-type]
    with client.chat.completions.stream(**request) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_completion().choices[0].message
    assert streamed.content == whole.content
    assert valid_calls(streamed) == valid_calls(whole)


@pytest.fixture(scope="module")
def unconstrained() -> Iterator[str]:
    with model_server(LlamaBackend(resolve(QWEN_CODER), n_ctx=4096, tool_grammar="off")) as url:
        yield url


async def test_without_the_grammar_refused_calls_are_reported_and_counted(
    unconstrained: str, workspace: Workspace
) -> None:
    """The model's calls that the server will not make (a schema echoed as arguments,
    arguments the schema refuses) come back in ``refused_calls``, reach the turn record through
    the harness client, and are counted in the eval record."""
    names = set(SCHEMAS)
    refusing = []
    for question in SIX:
        reply = post(unconstrained, {"model": "m", "messages": messages(question), "tools": TOOLS})
        message = reply.json()["choices"][0]["message"]
        written = call_spans(message["content"] or "", names)
        refused = reply.json().get("refused_calls", [])
        # Every call of an offered tool left in the text is one the server says it refused.
        assert [r["name"] for r in refused] == [s.name for s in written], reply.text
        assert all(r["reason"] for r in refused)
        if refused:
            refusing.append(question)
    assert refusing, "expected the unconstrained model to write at least one refused call"
    counted = 0
    for question in refusing:
        state = new_run(QWEN_CODER, question, system=SYSTEM_PROMPT)
        async with ProviderClient(unconstrained) as client:
            await run_loop(
                state, client, Setup(default_tools(), workspace), LoopConfig.of(max_turns=1)
            )
        record = record_of(state, QWEN_CODER, question)
        turn_refused = [r for t in state.turn_records for r in t.refused_calls or []]
        assert record.refused_calls == len(turn_refused)
        counted += record.refused_calls
    assert counted >= 1


def test_without_the_grammar_an_echoed_schema_is_not_a_call() -> None:
    """The packaged Qwen-Coder answers "How many files are there?" with list_files' schema as
    arguments when nothing constrains it; that text must stay text, never become a call."""
    with model_server(LlamaBackend(resolve(QWEN_CODER), n_ctx=4096, tool_grammar="off")) as url:
        (entry,) = httpx.get(f"{url}/models").json()["data"]
        assert entry["tool_grammar"] == "off"
        replies = [
            post(url, {"model": "m", "messages": messages(q), "tools": TOOLS}).json() for q in SIX
        ]
    echoed = 0
    for reply in replies:
        message = reply["choices"][0]["message"]
        for call in message.get("tool_calls") or []:
            args = json.loads(call["function"]["arguments"])
            jsonschema.validate(args, SCHEMAS[call["function"]["name"]])
        text = message["content"] or ""
        if not message.get("tool_calls") and any(f'"{k}"' in text for k in SCHEMA_KEYWORDS):
            echoed += 1
            assert reply["choices"][0]["finish_reason"] == "stop"
    assert echoed >= 1, "expected at least one schema echo left as text: " + json.dumps(replies)


def test_both_backends_make_the_same_constrained_call(
    smol_transformers: tuple[TransformersBackend, str],
) -> None:
    """SmolLM2 never calls a tool on its own; under "required" the grammar makes it, and the
    llama and transformers backends, greedy over the same weights, make the same call (the
    transformers backend keeps no cache between requests, so a shared one answers as a new one
    would)."""
    request = {
        "model": "m",
        "messages": messages("What does notes.txt say?"),
        "tools": TOOLS,
        "tool_choice": "required",
        "max_tokens": 60,
    }
    results = []
    with model_server(LlamaBackend(resolve(SMOLLM2), n_ctx=1024, reuse_prefix=False)) as llama:
        replies = [("llama", post(llama, request).json())]
    replies.append(("transformers", post(smol_transformers[1], request).json()))
    for name, reply in replies:
        assert reply["choices"][0]["finish_reason"] == "tool_calls", (name, reply)
        message = reply["choices"][0]["message"]
        (call,) = message["tool_calls"]
        args = json.loads(call["function"]["arguments"])
        jsonschema.validate(args, SCHEMAS[call["function"]["name"]])
        results.append((call["function"]["name"], args))
    assert results[0] == results[1]
