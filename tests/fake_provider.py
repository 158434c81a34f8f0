"""A provider in-process: an httpx transport that answers each turn with whatever a test says."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.client import ProviderClient, RetryPolicy

# What a turn gets: an HTTP status and a body (a JSON value, or raw text sent as is).
Answer = tuple[int, Any]


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def calls(*specs: tuple[str, str, str]) -> dict[str, Any]:
    """A reply asking for (id, tool name, arguments) calls."""
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in specs
    ]
    return completion({"role": "assistant", "content": None, "tool_calls": tool_calls})


def answer(text: str) -> dict[str, Any]:
    return completion({"role": "assistant", "content": text})


def turn_of(request: httpx.Request) -> int:
    """The agent's replies so far: its messages after the user's first (τ²'s greeting, before
    it, is not one)."""
    messages = json.loads(request.content)["messages"]
    first = next((i for i, m in enumerate(messages) if m["role"] == "user"), 0)
    return sum(1 for m in messages[first:] if m["role"] == "assistant")


def by_turn(answers: Sequence[Answer]) -> Callable[[httpx.Request], httpx.Response]:
    """Turn n gets ``answers[n]`` (the last one once they run out); requests are kept."""

    def handle(request: httpx.Request) -> httpx.Response:
        status, body = answers[min(turn_of(request), len(answers) - 1)]
        if isinstance(body, str):
            return httpx.Response(status, content=body.encode("utf-8", "surrogatepass"))
        return httpx.Response(status, content=json.dumps(body).encode())

    return handle


def fake_client(handler: Callable[[httpx.Request], httpx.Response]) -> ProviderClient:
    return ProviderClient(
        "http://fake.invalid/v1",
        retry=RetryPolicy(max_retries=1, base_delay_s=0.0, max_delay_s=0.0),
        transport=httpx.MockTransport(handler),
    )


def server_app(handler: Callable[[httpx.Request], httpx.Response], model_id: str) -> Starlette:
    """``handler`` behind real HTTP routes (chat completions and models), for code that takes
    a base URL rather than a transport: run it with ``serve_local.inprocess.running_server``."""

    async def chat(request: Request) -> Response:
        sent = handler(httpx.Request("POST", "/", content=await request.body()))
        return Response(sent.content, sent.status_code, media_type="application/json")

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": model_id, "backend": "fake"}]})

    return Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)]
    )
