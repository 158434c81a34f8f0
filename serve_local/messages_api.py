"""``POST /v1/messages``: the Anthropic Messages shape over the same backends as the chat route.

A Messages request is checked here, with errors in Anthropic's shape (``{"type": "error",
"error": {"type", "message"}}``), then mapped onto the :class:`ChatRequest` every backend
already takes: ``system`` becomes a system message, ``tool_use`` blocks become tool calls,
``tool_result`` blocks become tool messages, ``tool_choice`` ``auto | any | tool | none`` becomes
``auto | required | {function} | none`` and ``disable_parallel_tool_use`` becomes
``parallel_tool_calls: false``. So a tool call is decoded under the same grammar in both shapes,
and the scripted provider counts the same tokens for the same conversation whichever shape
carried it. The backend's :class:`Completion` is then written back as content blocks with a
stop reason:

    tool_calls -> tool_use     stop -> end_turn (or stop_sequence)     length -> max_tokens
    content_filter or a refusal -> refusal                             (scripted) pause_turn
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from serve_local.backends.base import Backend, Completion
from serve_local.callstream import CallDelta
from serve_local.errors import APIError
from serve_local.messages_request import parse_messages, to_chat
from serve_local.serving import complete_while_connected, live_stream, request_body

# Anthropic's error type for each HTTP status this server answers with.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}


def error_response(exc: APIError) -> JSONResponse:
    error_type = ERROR_TYPES.get(exc.status_code, "api_error")
    body = {"type": "error", "error": {"type": error_type, "message": exc.message}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def stop_reason(completion: Completion) -> str:
    if completion.refusal is not None or completion.finish_reason == "content_filter":
        return "refusal"
    if completion.stop_reason is not None:
        return completion.stop_reason
    return STOP_REASONS.get(completion.finish_reason, "end_turn")


def _input(arguments: str) -> dict[str, Any]:
    """A call's input object. Arguments that are not a JSON object (only a scripted malformed
    call has such) go out as an empty input: the wire has no place for anything else."""
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def content_blocks(completion: Completion) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = completion.content or completion.refusal
    if text:
        blocks.append({"type": "text", "text": text})
    for call in completion.tool_calls:
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": _input(function["arguments"]),
            }
        )
    return blocks


def _usage(completion: Completion) -> dict[str, int]:
    return {"input_tokens": completion.prompt_tokens, "output_tokens": completion.completion_tokens}


def message_body(completion: Completion, message_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": content_blocks(completion),
        "stop_reason": stop_reason(completion),
        "stop_sequence": completion.stop_sequence,
        "usage": _usage(completion),
    }
    if completion.timings is not None:
        body["timings"] = completion.timings.model_dump(exclude_none=True)
    if completion.refused_calls:
        body["refused_calls"] = completion.refused_calls
    if completion.grammar_loosened:
        body["grammar_loosened"] = completion.grammar_loosened
    return body


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n"


def _pieces(completion: Completion) -> Iterator[str | CallDelta]:
    """A finished reply as the items a live stream yields: text, then each call."""
    text = completion.content or completion.refusal
    if text:
        yield text
    for index, call in enumerate(completion.tool_calls):
        function = call["function"]
        yield CallDelta(index, "", call["id"], function["name"])
        yield CallDelta(index, json.dumps(_input(function["arguments"])))


async def _replayed(completion: Completion) -> AsyncIterator[str | CallDelta | Completion]:
    for piece in _pieces(completion):
        yield piece
    yield completion


async def stream_events(
    items: AsyncIterator[str | CallDelta | Completion],
    message_id: str,
    model: str,
    input_tokens: int,
) -> AsyncIterator[str]:
    """Anthropic's SSE events for a reply given as text pieces and call deltas, then its
    completion: ``message_start``, a ``content_block_start`` / ``_delta`` / ``_stop`` run per
    block, ``message_delta`` with the stop reason and usage, ``message_stop``."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    }
    yield _sse("message_start", {"message": start})
    index, open_kind = -1, None
    try:
        item = await anext(items)
        while not isinstance(item, Completion):
            if isinstance(item, CallDelta) and item.id is not None:
                if open_kind is not None:
                    yield _sse("content_block_stop", {"index": index})
                index, open_kind = index + 1, "tool_use"
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": item.id,
                    "name": item.name,
                    "input": {},
                }
                yield _sse("content_block_start", {"index": index, "content_block": block})
            elif isinstance(item, CallDelta):
                delta = {"type": "input_json_delta", "partial_json": item.arguments}
                yield _sse("content_block_delta", {"index": index, "delta": delta})
            else:
                if open_kind != "text":
                    if open_kind is not None:
                        yield _sse("content_block_stop", {"index": index})
                    index, open_kind = index + 1, "text"
                    text_block = {"type": "text", "text": ""}
                    yield _sse("content_block_start", {"index": index, "content_block": text_block})
                delta = {"type": "text_delta", "text": item}
                yield _sse("content_block_delta", {"index": index, "delta": delta})
            item = await anext(items)
    except APIError as exc:
        error: dict[str, Any] = {
            "type": ERROR_TYPES.get(exc.status_code, "api_error"),
            "message": exc.message,
        }
        yield _sse("error", {"error": error})
        return
    if open_kind is not None:
        yield _sse("content_block_stop", {"index": index})
    end = {"stop_reason": stop_reason(item), "stop_sequence": item.stop_sequence}
    yield _sse("message_delta", {"delta": end, "usage": _usage(item)})
    yield _sse("message_stop", {})


def add_messages_route(app: FastAPI, backend: Backend) -> None:
    """Serve ``POST /v1/messages`` from ``backend`` on ``app``."""

    @app.post("/v1/messages", response_model=None)
    async def messages(request: Request) -> JSONResponse | StreamingResponse:
        try:
            return await _answer(request)
        except APIError as exc:
            return error_response(exc)

    async def _answer(request: Request) -> JSONResponse | StreamingResponse:
        raw = await request_body(backend, request)
        if raw is None:
            return JSONResponse({}, status_code=499)  # nobody is left to read it
        asked = await asyncio.to_thread(parse_messages, raw)
        chat = to_chat(asked)
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        live = live_stream(backend, chat)
        if asked.stream and live is not None:
            served = str(backend.models()[0]["id"])
            counter = getattr(backend, "prompt_tokens", None)
            input_tokens = len(await asyncio.to_thread(counter, chat)) if counter else 0
            pieces = live(chat, threading.Event())
            first = await anext(pieces)  # errors (503, context length) surface as HTTP codes

            async def items() -> AsyncIterator[str | CallDelta | Completion]:
                yield first
                async for piece in pieces:
                    yield piece

            events = stream_events(items(), message_id, served, input_tokens)
            return StreamingResponse(events, media_type="text/event-stream")
        completion = await complete_while_connected(backend, chat, request)
        if asked.stream:
            events = stream_events(
                _replayed(completion), message_id, completion.model, completion.prompt_tokens
            )
            return StreamingResponse(events, media_type="text/event-stream")
        return JSONResponse(message_body(completion, message_id))
