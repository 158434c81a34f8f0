"""The scripted server over real HTTP: wire shape, statelessness, streaming, bad input."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from harness.tools import default_tools
from serve_local import tokens
from tests.helpers import DANGLING_REF, REMOTE_REF, post, tool_with, user
from tests.nesting_cases import chat_cases

TOOLS = [t.spec() for t in default_tools()]


def plan_request(**extra: Any) -> dict[str, Any]:
    return {
        "model": "scripted:plan",
        "messages": [user("Which file mentions a timeout?")],
        "tools": TOOLS,
        **extra,
    }


def test_health_and_models(scripted_url: str) -> None:
    root = scripted_url.removesuffix("/v1")
    assert httpx.get(f"{root}/health").json()["status"] == "ok"
    ids = [m["id"] for m in httpx.get(f"{scripted_url}/models").json()["data"]]
    for name in [
        "plan",
        "runaway",
        "recover",
        "denied",
        "duplicate",
        "destructive",
        "slow",
        "oracle",
    ]:
        assert f"scripted:{name}" in ids


def test_first_turn_of_plan_is_a_tool_call(scripted_url: str) -> None:
    body = post(scripted_url, plan_request()).json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "scripted:plan"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "list_files", "arguments": "{}"},
    }
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_prompt_tokens_are_bpe_counts_of_the_serialized_request(scripted_url: str) -> None:
    """Counts of compact JSON written out by hand, in o200k_base, not the server's own sums."""
    question = [user("Which file mentions a timeout?")]
    body = post(scripted_url, {"model": "scripted:plan", "messages": question}).json()
    wire = '{"messages":[{"role":"user","content":"Which file mentions a timeout?"}]}'
    assert len(tokens.encoding().encode(wire)) == 18
    assert body["usage"]["prompt_tokens"] == 18
    reply = (
        '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
        '"function":{"name":"list_files","arguments":"{}"}}]}'
    )
    assert len(tokens.encoding().encode(reply)) == 34
    with_tools = post(scripted_url, plan_request()).json()["usage"]
    assert (with_tools["prompt_tokens"], with_tools["completion_tokens"]) == (221, 34)


def test_reply_depends_only_on_the_transcript(scripted_url: str) -> None:
    """Stateless: the same transcript sent twice, with other traffic between, gets one reply."""
    messages = [
        user("Which file mentions a timeout?"),
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
        {"role": "tool", "tool_call_id": "c1", "content": "errors.log  150 bytes"},
    ]
    request = {"model": "scripted:plan", "messages": messages, "tools": TOOLS}
    first = post(scripted_url, request).json()
    post(scripted_url, plan_request())
    second = post(scripted_url, request).json()
    assert first["choices"] == second["choices"]
    assert first["usage"] == second["usage"]
    call = first["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "errors.log"}


def test_streaming_carries_the_same_reply_and_a_final_usage_chunk(scripted_url: str) -> None:
    plain = post(scripted_url, plan_request()).json()
    with httpx.stream(
        "POST",
        f"{scripted_url}/chat/completions",
        timeout=10,
        json=plan_request(stream=True, stream_options={"include_usage": True}),
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [
            line.removeprefix("data: ") for line in r.iter_lines() if line.startswith("data: ")
        ]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    calls = [tc for c in chunks for ch in c["choices"] for tc in ch["delta"].get("tool_calls", [])]
    assert [{k: v for k, v in tc.items() if k != "index"} for tc in calls] == plain["choices"][0][
        "message"
    ]["tool_calls"]
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == plain["usage"]


LIST_CALL = {
    "id": "call_0",
    "type": "function",
    "function": {"name": "list_files", "arguments": "{}"},
}
BAD_INPUTS: list[tuple[str, Any, int, str]] = [
    ("not json", "{this is not json", 400, "not valid JSON"),
    ("json but not an object", "[1, 2]", 400, "JSON object"),
    ("messages missing", {"model": "scripted:plan"}, 400, "messages"),
    ("messages empty", {"model": "scripted:plan", "messages": []}, 400, "at least one message"),
    (
        "unknown role",
        {"model": "scripted:plan", "messages": [{"role": "robot", "content": "x"}]},
        400,
        "'robot' is not a role",
    ),
    (
        "tool message without tool_call_id",
        {"model": "scripted:plan", "messages": [user("q"), {"role": "tool", "content": "x"}]},
        400,
        "tool_call_id",
    ),
    (
        "tool message answering an id nobody asked for",
        {
            "model": "scripted:plan",
            "messages": [user("q"), {"role": "tool", "tool_call_id": "c9", "content": "x"}],
        },
        400,
        "'c9'",
    ),
    (
        "a tool call id used twice in the history",
        {
            "model": "scripted:plan",
            "messages": [
                user("q"),
                {"role": "assistant", "content": None, "tool_calls": [LIST_CALL]},
                {"role": "tool", "tool_call_id": "call_0", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [LIST_CALL]},
                {"role": "tool", "tool_call_id": "call_0", "content": "x"},
            ],
        },
        400,
        "reuses the id 'call_0'",
    ),
    (
        "a tool call id used twice in one reply",
        {
            "model": "scripted:plan",
            "messages": [
                user("q"),
                {"role": "assistant", "content": None, "tool_calls": [LIST_CALL, LIST_CALL]},
            ],
        },
        400,
        "tool_calls[1] reuses the id 'call_0'",
    ),
    ("unknown scenario", {"model": "scripted:nope", "messages": [user("q")]}, 404, "scripted:nope"),
    (
        "tools not a list",
        {"model": "scripted:plan", "messages": [user("q")], "tools": "list_files"},
        400,
        "tools",
    ),
    (
        "tools holding a non-function spec",
        {"model": "scripted:plan", "messages": [user("q")], "tools": [{"type": "retrieval"}]},
        400,
        "tools",
    ),
    (
        "tool spec without a name",
        {
            "model": "scripted:plan",
            "messages": [user("q")],
            "tools": [{"type": "function", "function": {"parameters": {}}}],
        },
        400,
        "tools.0.function.name",
    ),
    ("n > 1", {"model": "scripted:plan", "messages": [user("q")], "n": 3}, 400, "n=3"),
    (
        "max_tokens zero",
        {"model": "scripted:plan", "messages": [user("q")], "max_tokens": 0},
        400,
        "max_tokens",
    ),
    (
        "unknown scripted fault",
        {"model": "scripted:plan+boom", "messages": [user("q")]},
        400,
        "unknown scripted fault 'boom'",
    ),
    (
        "max_tokens absurdly large",
        {"model": "scripted:plan", "messages": [user("q")], "max_tokens": 10**12},
        400,
        "max_tokens",
    ),
    (
        "image content part",
        {
            "model": "scripted:plan",
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}
            ],
        },
        400,
        "image_url",
    ),
    (
        "tool_choice naming a tool not offered",
        plan_request(tool_choice={"type": "function", "function": {"name": "rm_rf"}}),
        400,
        "'rm_rf', which is not among the offered tools",
    ),
    (
        "tool_choice required without tools",
        {"model": "scripted:plan", "messages": [user("q")], "tool_choice": "required"},
        400,
        "offers no 'tools'",
    ),
    (
        "tool_choice naming a function without tools",
        {
            "model": "scripted:plan",
            "messages": [user("q")],
            "tool_choice": {"type": "function", "function": {"name": "list_files"}},
        },
        400,
        "offers no 'tools'",
    ),
    ("tool_choice an unknown word", plan_request(tool_choice="always"), 400, "'always'"),
    (
        "tool_choice object without a function name",
        plan_request(tool_choice={"type": "function"}),
        400,
        "Invalid value for 'tool_choice'",
    ),
    (
        "tool parameters that are not a JSON Schema",
        plan_request(
            tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}]
        ),
        400,
        "tools[0].function.parameters is not a valid JSON Schema",
    ),
    (
        "tool parameters that refer to themselves",
        plan_request(tools=[tool_with({"type": "object", "$ref": "#"})]),
        400,
        "recurse forever",
    ),
    (
        "tool parameters looping through allOf",
        plan_request(tools=[tool_with({"type": "object", "allOf": [{"$ref": "#"}]})]),
        400,
        "recurse forever",
    ),
    (
        "tool parameters referring to another document",
        plan_request(tools=[tool_with(REMOTE_REF)]),
        400,
        "'https://example.com/path.json' (at properties/path) points outside the schema",
    ),
    (
        "tool parameters referring to nothing",
        plan_request(tools=[tool_with(DANGLING_REF)]),
        400,
        "'#/$defs/path' (at properties/path) names nothing in the schema",
    ),
    (
        "tool parameters that are not an object schema",
        plan_request(tools=[tool_with({"type": "string"})]),
        400,
        "tools[0].function.parameters is not an object schema",
    ),
    (
        "two tools with one name",
        plan_request(tools=[TOOLS[0], TOOLS[0]]),
        400,
        "repeats the name 'list_files'",
    ),
    (
        "temperature out of range",
        {"model": "scripted:plan", "messages": [user("q")], "temperature": 9},
        400,
        "temperature",
    ),
    (
        "frequency_penalty out of range",
        {"model": "scripted:plan", "messages": [user("q")], "frequency_penalty": 3},
        400,
        "frequency_penalty",
    ),
    (
        "repetition_penalty of zero",
        {"model": "scripted:plan", "messages": [user("q")], "repetition_penalty": 0},
        400,
        "repetition_penalty",
    ),
    (
        "messages not a list",
        {"model": "scripted:plan", "messages": "hello"},
        400,
        "messages",
    ),
    (
        "stop of the wrong type",
        {"model": "scripted:plan", "messages": [user("q")], "stop": 5},
        400,
        "stop",
    ),
    *[(case, body, 400, words) for case, body, words in chat_cases("scripted:plan")],
]


@pytest.mark.parametrize(
    ("case", "body", "status", "says"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_gets_a_4xx_with_an_openai_error_body(
    scripted_url: str, case: str, body: Any, status: int, says: str
) -> None:
    response = post(scripted_url, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert says in error["message"]
    assert error["type"] == "invalid_request_error"


def test_without_tools_a_scripted_call_becomes_a_report(scripted_url: str) -> None:
    body = post(scripted_url, {"model": "scripted:runaway", "messages": [user("q")]}).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"]
    assert choice["message"]["content"].startswith("I ran out of turns")


def test_unknown_route_is_an_openai_shaped_404(scripted_url: str) -> None:
    response = httpx.get(f"{scripted_url}/engines")
    assert response.status_code == 404
    assert "message" in response.json()["error"]
