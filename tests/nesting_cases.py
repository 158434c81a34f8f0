"""Requests nested past :mod:`serve_local.nesting`'s limits, for each route's malformed-request
suite and for each backend: (case, body, words the 400 says)."""

from __future__ import annotations

from typing import Any

import httpx

from harness.tools import default_tools
from serve_local.nesting import MAX_ARGUMENTS_DEPTH, MAX_BODY_DEPTH, MAX_SCHEMA_DEPTH

TOOLS = [t.spec() for t in default_tools()]


def nested(depth: int, shape: str) -> str:
    """``depth`` levels of one shape: arrays, objects, both in turn, left open, or closers."""
    if shape == "arrays":
        return "[" * depth + "]" * depth
    if shape == "objects":
        return '{"a": ' * depth + "1" + "}" * depth
    if shape == "mixed":
        opening = "".join('[{"a": ' if i % 2 else "[" for i in range(depth))
        closing = "".join("}]" if i % 2 else "]" for i in reversed(range(depth)))
        return opening + "1" + closing
    if shape == "open arrays":
        return "[" * depth
    if shape == "open objects":
        return '{"a": ' * depth
    assert shape == "closers"
    return "]}" * depth


SHAPES = ["arrays", "objects", "mixed", "open arrays", "open objects", "closers"]


def schema_of_depth(levels: int) -> dict[str, Any]:
    """``levels`` object schemas one inside the other: 2 JSON levels each."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def chat_tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "read", "parameters": parameters}}


def deep_body(depth: int, shape: str) -> str:
    """A body whose ``messages`` hold ``depth`` levels of one shape."""
    return '{"model": "scripted:plan", "messages": ' + nested(depth, shape) + "}"


def history_with_arguments(arguments: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Which file mentions a timeout?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "no such file"},
    ]


def _sent(body: Any) -> dict[str, Any]:
    """A body as a client sends it: raw text declared as JSON (an undeclared body is refused
    before it is read, tests/test_server_limits.py)."""
    if isinstance(body, str):
        return {"content": body, "headers": {"Content-Type": "application/json"}}
    return {"json": body}


def _chat(url: str, body: Any) -> httpx.Response:
    return httpx.post(f"{url}/chat/completions", timeout=300, **_sent(body))


def _messages(url: str, body: Any) -> httpx.Response:
    return httpx.post(f"{url.removesuffix('/v1')}/v1/messages", timeout=300, **_sent(body))


def chat_cases(model: str) -> list[tuple[str, Any, str]]:
    """(case, body, words the 400 says) for the chat route."""
    base: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "q"}]}
    return [
        (
            "body of 100,000 nested arrays",
            "[" * 100_000 + "]" * 100_000,
            f"nests more than {MAX_BODY_DEPTH} levels",
        ),
        (
            "body of nested objects in messages",
            deep_body(2_000, "objects"),
            f"nests more than {MAX_BODY_DEPTH} levels",
        ),
        (
            "body left open 50,000 deep",
            deep_body(50_000, "open arrays"),
            f"nests more than {MAX_BODY_DEPTH} levels",
        ),
        (
            "tool schema 100 levels deep (200 levels of the body)",
            {**base, "tools": [chat_tool(schema_of_depth(100))]},
            f"nests more than {MAX_BODY_DEPTH} levels",
        ),
        (
            "tool schema just past the limit",
            {**base, "tools": [chat_tool(schema_of_depth(MAX_SCHEMA_DEPTH // 2))]},
            f"nested more than {MAX_SCHEMA_DEPTH} levels deep",
        ),
        (
            "call arguments 3,000 deep in the history",
            {**base, "messages": history_with_arguments("[" * 3000 + "]" * 3000)},
            f"nest more than {MAX_ARGUMENTS_DEPTH} levels",
        ),
    ]


def messages_cases(model: str) -> list[tuple[str, Any, str]]:
    """The same cases in the Messages shape, plus a tool_use input past the limit."""
    base: dict[str, Any] = {
        "model": model,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "q"}],
    }
    use_input: Any = "x"
    for _ in range(MAX_ARGUMENTS_DEPTH + 1):
        use_input = {"a": use_input}
    history = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "read_file", "input": use_input}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "none"}],
        },
    ]
    words = f"nests more than {MAX_BODY_DEPTH} levels"
    return [
        ("body of 100,000 nested arrays", "[" * 100_000 + "]" * 100_000, words),
        ("body of nested objects in messages", deep_body(2_000, "objects"), words),
        ("body left open 50,000 deep", deep_body(50_000, "open arrays"), words),
        (
            "tool schema 100 levels deep (200 levels of the body)",
            {**base, "tools": [{"name": "t", "input_schema": schema_of_depth(100)}]},
            words,
        ),
        (
            "tool schema just past the limit",
            {
                **base,
                "tools": [{"name": "t", "input_schema": schema_of_depth(MAX_SCHEMA_DEPTH // 2)}],
            },
            f"nested more than {MAX_SCHEMA_DEPTH} levels deep",
        ),
        (
            "tool_use input past the limit",
            {**base, "messages": history},
            f"nests more than {MAX_ARGUMENTS_DEPTH} levels",
        ),
    ]


def assert_chat_refuses(url: str, model: str) -> None:
    for case, body, words in chat_cases(model):
        response = _chat(url, body)
        assert response.status_code == 400, (case, response.text[:300])
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}, case
        assert error["type"] == "invalid_request_error", case
        assert words in error["message"], (case, error["message"])


def assert_messages_refuses(url: str, model: str) -> None:
    for case, body, words in messages_cases(model):
        response = _messages(url, body)
        assert response.status_code == 400, (case, response.text[:300])
        reply = response.json()
        assert reply["type"] == "error" and set(reply["error"]) == {"type", "message"}, case
        assert reply["error"]["type"] == "invalid_request_error", case
        assert words in reply["error"]["message"], (case, reply["error"]["message"])


def assert_within_limits_is_served(url: str, model: str) -> None:
    """What is inside every limit is answered: a schema at the limit, arguments at the limit."""
    at_limit = schema_of_depth(MAX_SCHEMA_DEPTH // 2 - 1)
    body = {
        "model": model,
        "max_tokens": 8,
        "messages": history_with_arguments(
            '{"path": ' + "[" * (MAX_ARGUMENTS_DEPTH - 1) + "]" * (MAX_ARGUMENTS_DEPTH - 1) + "}"
        ),
        "tools": [*TOOLS, chat_tool(at_limit)],
    }
    response = _chat(url, body)
    assert response.status_code == 200, response.text[:300]
