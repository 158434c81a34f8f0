"""The FastAPI app: ``/v1/chat/completions``, ``/v1/messages`` (:mod:`serve_local.messages_api`),
``/v1/models``, ``/health``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from serve_local import __version__
from serve_local.backends.base import Backend, Completion
from serve_local.callstream import CallDelta
from serve_local.errors import APIError
from serve_local.guard import Guard, Limits
from serve_local.messages_api import add_messages_route
from serve_local.schema import ChatRequest
from serve_local.serving import complete_while_connected, live_stream, request_body
from serve_local.validation import parse_body

SERVER = f"loopbench serve_local {__version__}"


def _error(status: int, message: str, error_type: str, code: str | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return JSONResponse(body, status_code=status)


def completion_body(completion: Completion, completion_id: str, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": completion.content}
    if completion.tool_calls:
        message["tool_calls"] = completion.tool_calls
    if completion.refusal is not None:
        message["refusal"] = completion.refusal
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": completion.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": completion.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _usage(completion),
    }
    if completion.timings is not None:
        body["timings"] = completion.timings.model_dump(exclude_none=True)
    if completion.refused_calls:
        body["refused_calls"] = completion.refused_calls
    if completion.grammar_loosened:
        body["grammar_loosened"] = completion.grammar_loosened
    return body


def _usage(completion: Completion) -> dict[str, int]:
    return {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
    }


def stream_chunks(
    completion: Completion, completion_id: str, created: int, include_usage: bool
) -> Iterator[dict[str, Any]]:
    """The chunks of a finished completion, in the order OpenAI's streaming API sends them."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": completion.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if completion.content:
        yield chunk({"content": completion.content})
    for index, call in enumerate(completion.tool_calls):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, completion.finish_reason)
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _usage(completion)
        if completion.timings is not None:
            last["timings"] = completion.timings.model_dump(exclude_none=True)
        if completion.refused_calls:
            last["refused_calls"] = completion.refused_calls
        if completion.grammar_loosened:
            last["grammar_loosened"] = completion.grammar_loosened
        yield last


async def _live_sse(
    first: str | CallDelta | Completion,
    rest: AsyncIterator[str | CallDelta | Completion],
    completion_id: str,
    created: int,
    include_usage: bool,
    model: str,
) -> AsyncIterator[str]:
    """SSE for a reply streamed as generated: text pieces and tool-call deltas, then the finish
    and usage of the completion, the backend's last item."""

    def chunk(delta: dict[str, Any]) -> str:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}],
        }
        return f"data: {json.dumps(body)}\n\n"

    item = first
    yield chunk({"role": "assistant", "content": ""})
    while not isinstance(item, Completion):
        if isinstance(item, CallDelta):
            yield chunk({"tool_calls": [item.wire()]})
        else:
            yield chunk({"content": item})
        item = await anext(rest)
    finished = Completion(**{**vars(item), "content": None, "tool_calls": []})
    for tail in stream_chunks(finished, completion_id, created, include_usage):
        if tail["choices"] and tail["choices"][0]["delta"].get("role"):
            continue  # the role chunk went out first
        yield f"data: {json.dumps(tail)}\n\n"
    yield "data: [DONE]\n\n"


async def _sse(chunks: Iterator[dict[str, Any]]) -> AsyncIterator[str]:
    for item in chunks:
        yield f"data: {json.dumps(item)}\n\n"
    yield "data: [DONE]\n\n"


log = logging.getLogger("serve_local")


async def _load(backend: Backend, on_failure: Callable[[], None]) -> None:
    try:
        await asyncio.to_thread(backend.load)
    except Exception as exc:  # any load failure ends the server, with the reason
        backend.load_error = f"{exc.__class__.__name__}: {exc}"
        log.error("serve_local: cannot load the model: %s", backend.load_error)
        print(f"serve_local: cannot load the model: {backend.load_error}", flush=True)
        on_failure()


def create_app(
    backend: Backend,
    on_load_failure: Callable[[], None] = lambda: None,
    limits: Limits | None = None,
    name: str | None = None,
) -> FastAPI:
    """The server for ``backend``; its weights load in the background after startup. Every
    request passes ``limits`` first (:mod:`serve_local.guard`; by default: loopback Host names,
    JSON bodies of at most 4 MB). ``/health`` says the server's ``name`` and pid, so whoever
    started it can tell it from another server on the same port."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.create_task(_load(backend, on_load_failure))
        yield
        loading.cancel()

    app = FastAPI(title="loopbench serve_local", version="0.1.0", lifespan=lifespan)
    app.state.backend = backend
    app.add_middleware(Guard, limits=limits or Limits())

    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, f"Invalid request: {exc.errors()[0]['msg']}", "invalid_request_error")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), "invalid_request_error")

    @app.get("/health")
    async def health() -> JSONResponse:
        if backend.load_error:
            return JSONResponse({"status": "error", "error": backend.load_error}, status_code=500)
        if not backend.ready:
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse(
            {"status": "ok", "backend": backend.name, "pid": os.getpid(), "name": name}
        )

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        # "server" names the software that answers, so an eval's records can say so
        data = [
            {"object": "model", "owned_by": "local", "server": SERVER, **m}
            for m in backend.models()
        ]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> JSONResponse | StreamingResponse:
        raw = await request_body(backend, request)
        if raw is None:
            return JSONResponse({}, status_code=499)  # nobody is left to read it
        # Off the event loop, as every step whose time grows with the body: /health answers.
        chat: ChatRequest = await asyncio.to_thread(parse_body, raw)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        live = live_stream(backend, chat)
        if chat.stream and live is not None:
            # Text goes out as it is generated, and constrained calls as each one closes; a
            # reply that may hold unconstrained calls is parsed whole first.
            served = str(backend.models()[0]["id"])
            pieces = live(chat, threading.Event())
            first = await anext(pieces)  # errors (503, context length) surface as HTTP codes
            return StreamingResponse(
                _live_sse(first, pieces, completion_id, created, include_usage, served),
                media_type="text/event-stream",
            )
        completion = await complete_while_connected(backend, chat, request)
        if chat.stream:
            chunks = stream_chunks(completion, completion_id, created, include_usage)
            return StreamingResponse(_sse(chunks), media_type="text/event-stream")
        return JSONResponse(completion_body(completion, completion_id, created))

    add_messages_route(app, backend)
    return app
