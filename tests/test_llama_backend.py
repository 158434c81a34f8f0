"""The llama.cpp backend end to end, with the real packaged models over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from harness.client import ProviderClient
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.workspace import Workspace
from serve_local.backends.llama import LlamaBackend
from serve_local.models import QWEN_CODER, SMOLLM2, resolve
from tests.helpers import post
from tests.models_fixtures import assert_tool_text_stays_text, model_server
from tests.nesting_cases import (
    assert_chat_refuses,
    assert_messages_refuses,
    assert_within_limits_is_served,
)

TOOLS = [t.spec() for t in default_tools()]
SIX_TASKS = [
    "Which file mentions a timeout?",
    "How many files are there?",
    "What does notes.txt say?",
    "List the files and read each one.",
    "Which file is the largest?",
    "Is there a file about rotating logs?",
]


@pytest.fixture(scope="module")
def smol() -> Iterator[str]:
    with model_server(LlamaBackend(resolve(SMOLLM2), n_ctx=1024)) as url:
        yield url


QWEN_BACKEND: dict[str, LlamaBackend] = {}


@pytest.fixture(scope="module")
def qwen() -> Iterator[str]:
    backend = LlamaBackend(resolve(QWEN_CODER), n_ctx=4096)
    QWEN_BACKEND["qwen"] = backend
    with model_server(backend) as url:
        yield url


def ask(url: str, text: str, **extra: Any) -> dict[str, Any]:
    body = {"model": "any", "messages": [{"role": "user", "content": text}], **extra}
    response = post(url, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_models_names_the_weights_actually_served(smol: str) -> None:
    (entry,) = httpx.get(f"{smol}/models").json()["data"]
    assert entry["id"] == SMOLLM2
    assert entry["sha256"] == resolve(SMOLLM2).sha256
    assert (entry["backend"], entry["context_length"]) == ("llama", 1024)
    reply = ask(smol, "Say hello.", max_tokens=4)
    assert reply["model"] == SMOLLM2


def test_greedy_output_is_byte_identical(smol: str) -> None:
    _move_cache(smol)
    first = ask(smol, "Name three colors.", max_tokens=24)
    _move_cache(smol)
    second = ask(smol, "Name three colors.", max_tokens=24)
    assert first["choices"][0]["message"] == second["choices"][0]["message"]
    assert first["usage"] == second["usage"]


def test_second_turn_reuses_the_first_turns_prompt(smol: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is a log file?"}]
    first = post(smol, {"model": "m", "messages": messages, "max_tokens": 16}).json()
    prompt_1 = first["usage"]["prompt_tokens"]
    messages += [
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "And why rotate it?"},
    ]
    second = post(smol, {"model": "m", "messages": messages, "max_tokens": 16}).json()
    timings, prompt_2 = second["timings"], second["usage"]["prompt_tokens"]
    assert timings["cache_n"] >= prompt_1
    assert timings["prompt_n"] == prompt_2 - timings["cache_n"]
    assert timings["prompt_n"] < prompt_2 - prompt_1 + 16


def test_timings_are_reported(smol: str) -> None:
    timings = ask(smol, "Count to five.", max_tokens=8)["timings"]
    assert set(timings) == {
        "prompt_n",
        "cache_n",
        "prompt_ms",
        "predicted_n",
        "predicted_ms",
        "queue_ms",
    }
    assert timings["prompt_ms"] > 0 and timings["predicted_n"] > 0


def test_max_tokens_ends_with_length(smol: str) -> None:
    reply = ask(smol, "Write a long story about a lighthouse.", max_tokens=3)
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 3


def test_stop_sequence_cuts_the_text(smol: str) -> None:
    full = ask(smol, "Describe the sea in one sentence.", max_tokens=40)
    text = full["choices"][0]["message"]["content"]
    assert "e" in text
    cut = ask(smol, "Describe the sea in one sentence.", max_tokens=40, stop=["e"])
    assert cut["choices"][0]["message"]["content"] == text[: text.index("e")]
    assert cut["choices"][0]["finish_reason"] == "stop"


def test_prompt_longer_than_the_context_is_a_400_and_the_server_goes_on(smol: str) -> None:
    response = post(smol, {"model": "m", "messages": [{"role": "user", "content": "word " * 3000}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded" and "1024" in error["message"]
    assert ask(smol, "Still there?", max_tokens=4)["choices"][0]["message"]["content"]


def test_two_clients_at_once_get_what_they_get_alone() -> None:
    # Without prefix reuse every prompt is evaluated whole, so the order the two requests are
    # served in cannot change how their prompts are batched.
    with model_server(LlamaBackend(resolve(SMOLLM2), n_ctx=1024, reuse_prefix=False)) as url:
        _two_clients(url)


def _two_clients(url: str) -> None:
    prompts = ["List two fruits.", "List two animals."]
    alone = [ask(url, p, max_tokens=16)["choices"][0]["message"]["content"] for p in prompts]
    together: dict[int, str] = {}

    def send(i: int) -> None:
        together[i] = ask(url, prompts[i], max_tokens=16)["choices"][0]["message"]["content"]

    threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [together[0], together[1]] == alone


def test_streaming_returns_the_same_text(smol: str) -> None:
    plain = ask(smol, "Name a planet.", max_tokens=12)["choices"][0]["message"]["content"]
    client = openai.OpenAI(base_url=smol, api_key="unused")
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Name a planet."}],
            max_tokens=12,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == plain
    assert chunks[-1].usage is not None


def _stream(url: str, text: str, **extra: Any) -> list[dict[str, Any]]:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": text}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200
        lines = [x.removeprefix("data: ") for x in response.iter_lines() if x.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(x) for x in lines[:-1]]


def _move_cache(url: str) -> None:
    """Leave the KV cache holding another conversation, so the next prompt is evaluated in
    the same batches as the one it is compared with (llama.cpp's sums depend on batch size)."""
    ask(url, "Something else entirely, to move the cache.", max_tokens=4)


def test_text_streams_as_it_is_generated(smol: str) -> None:
    _move_cache(smol)
    plain = ask(smol, "Write two sentences about rivers.", max_tokens=30)
    _move_cache(smol)
    chunks = _stream(smol, "Write two sentences about rivers.", max_tokens=30)
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    text_pieces = [p for p in pieces if p]
    assert len(text_pieces) > 5  # many pieces, not the finished text in one
    assert "".join(text_pieces) == plain["choices"][0]["message"]["content"]
    assert chunks[-1]["usage"] == plain["usage"] and chunks[-1]["model"] == SMOLLM2
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == plain["choices"][0]["finish_reason"]


def test_streamed_text_never_shows_a_stop_sequence(smol: str) -> None:
    _move_cache(smol)
    full = ask(smol, "Describe the sea in one sentence.", max_tokens=40)
    text = full["choices"][0]["message"]["content"]
    stop = text[10:14]
    _move_cache(smol)
    chunks = _stream(smol, "Describe the sea in one sentence.", max_tokens=40, stop=[stop])
    streamed = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
    )
    assert streamed == text[: text.index(stop)]


def test_official_client_with_the_four_tools(qwen: str) -> None:
    client = openai.OpenAI(base_url=qwen, api_key="unused")
    completion = client.chat.completions.create(
        model=QWEN_CODER,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "Which file is the largest?"},
        ],
        tools=TOOLS,  # type: ignore[arg-type]
        max_tokens=512,
    )
    choice = completion.choices[0]
    assert completion.model == QWEN_CODER
    # The finish reason must say what happened: calls, the token limit, or a finished answer.
    if choice.message.tool_calls:
        assert choice.finish_reason == "tool_calls"
    elif choice.finish_reason == "length":
        assert completion.usage is not None and completion.usage.completion_tokens == 512
    else:
        assert choice.finish_reason == "stop" and choice.message.content
    for call in choice.message.tool_calls or []:
        assert call.function.name in {"list_files", "read_file", "delete_file", "scan_archive"}
        assert isinstance(json.loads(call.function.arguments), dict)


async def test_qwen_makes_a_real_tool_call_that_the_harness_runs(
    qwen: str, workspace: Workspace
) -> None:
    with_calls = []
    for task in SIX_TASKS:
        body = post(
            qwen,
            {
                "model": "m",
                "tools": TOOLS,
                "messages": [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": task},
                ],
            },
        )
        if body.json()["choices"][0]["finish_reason"] == "tool_calls":
            with_calls.append(task)
    assert with_calls, "no task produced tool_calls"
    # A call that ran and succeeded: an error result (no such file, bad arguments) is not one.
    succeeded = []
    for task in with_calls:
        state = new_run(QWEN_CODER, task, system=SYSTEM_PROMPT)
        async with ProviderClient(qwen) as client:
            await run_loop(
                state, client, Setup(default_tools(), workspace), LoopConfig.of(max_turns=2)
            )
        succeeded = [r for r in state.tool_log if r.ok and r.ran]
        if succeeded:
            break
    assert succeeded, "no tool call from the model ran successfully"
    result = next(m for m in state.messages if m.get("tool_call_id") == succeeded[0].call_id)
    assert result["content"] and not result["content"].startswith("Error")


def test_qwen_history_with_tool_calls_is_accepted(qwen: str) -> None:
    """An assistant message with content null and tool_calls, then its tool result."""
    messages = [
        {"role": "user", "content": "Which file is the largest?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "errors.log  163 bytes\nnotes.txt  30 bytes",
        },
    ]
    response = post(qwen, {"model": "m", "messages": messages, "tools": TOOLS, "max_tokens": 40})
    assert response.status_code == 200, response.text


def test_a_reply_with_calls_stays_in_the_cache_for_the_next_turn(qwen: str) -> None:
    """With --written-replies, the reply comes back as a structured call, with ids the client
    renamed; the next prompt holds it as the model wrote it, so its tokens are taken from the
    cache instead of being evaluated again (serve_local.written)."""
    from serve_local.written import WrittenReplies

    QWEN_BACKEND["qwen"].written = WrittenReplies()
    try:
        _reply_is_kept(qwen)
    finally:
        QWEN_BACKEND["qwen"].written = None  # the default, for the other tests


def _reply_is_kept(qwen: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What does notes.txt say?"}]
    body = {"model": "m", "tools": TOOLS, "tool_choice": "required", "max_tokens": 60}
    first = post(qwen, {**body, "messages": messages}).json()
    reply = first["choices"][0]["message"]
    assert reply["tool_calls"], reply
    for i, call in enumerate(reply["tool_calls"]):
        call["id"] = f"renamed-{i}"
    results = [
        {"role": "tool", "tool_call_id": c["id"], "content": "Remember to rotate your logs."}
        for c in reply["tool_calls"]
    ]
    messages += [reply, *results]
    second = post(qwen, {**body, "messages": messages, "tool_choice": "auto"}).json()
    kept = second["timings"]["cache_n"] - first["usage"]["prompt_tokens"]
    # The last token or two of a reply the call grammar ended are not evaluated yet.
    assert kept >= first["usage"]["completion_tokens"] - 2, (kept, first["usage"])


def test_penalties_reach_the_sampler(smol: str) -> None:
    prompt = "Write the word log twenty times, separated by spaces."
    plain = ask(smol, prompt, max_tokens=24)["choices"][0]["message"]["content"]
    for penalty in (
        {"repetition_penalty": 1.8},
        {"repeat_penalty": 1.8},
        {"frequency_penalty": 1.5},
        {"presence_penalty": 1.5},
    ):
        penalized = ask(smol, prompt, max_tokens=24, **penalty)["choices"][0]["message"]
        assert penalized["content"] != plain, penalty
    again = ask(smol, prompt, max_tokens=24, repetition_penalty=1.0)["choices"][0]["message"]
    assert again["content"] == plain  # 1.0 is no penalty


def test_a_tool_result_cannot_open_a_turn_of_its_own() -> None:
    backend = LlamaBackend(resolve(SMOLLM2), n_ctx=1024)
    with model_server(backend) as url:
        assert_tool_text_stays_text(backend, url)


def test_deep_input_is_a_400_on_both_routes_and_within_the_limits_is_rendered(qwen: str) -> None:
    """The real chat template renders a call's arguments: 3,000 levels of them were a 500."""
    assert_chat_refuses(qwen, "m")
    assert_messages_refuses(qwen, "m")
    assert_within_limits_is_served(qwen, "m")
