"""What every route does around a backend, whatever its wire shape: read the body, stream
live when the reply allows it, complete while watching for a client that goes away."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import Request
from starlette.requests import ClientDisconnect

from serve_local.backends.base import Backend, Completion
from serve_local.callstream import CallDelta
from serve_local.errors import APIError
from serve_local.schema import ChatRequest

LiveStream = Callable[[ChatRequest, threading.Event], AsyncIterator[str | CallDelta | Completion]]


async def request_body(backend: Backend, request: Request) -> bytes | None:
    """The raw body once the model is ready (503 before); None if the client already left."""
    if not backend.ready:
        raise APIError("The model is still loading; retry shortly.", status_code=503)
    try:
        return await request.body()
    except ClientDisconnect:
        return None


def live_stream(backend: Backend, chat: ChatRequest) -> LiveStream | None:
    """The backend's live stream, when this reply can go out as it is generated: it offers no
    calls, or the backend constrains calls and so tells a call from text as it generates."""
    live: LiveStream | None = getattr(backend, "stream", None)
    no_calls = not chat.tools or chat.tool_choice == "none"
    if live is None or not (no_calls or getattr(backend, "streams_calls", False)):
        return None
    return live


async def _watch_disconnect(request: Request, cancel: threading.Event) -> None:
    while not cancel.is_set():
        try:
            gone = await request.is_disconnected()
        except ClientDisconnect:
            gone = True
        if gone:
            cancel.set()
            return
        await asyncio.sleep(0.1)


async def complete_while_connected(
    backend: Backend, chat: ChatRequest, request: Request
) -> Completion:
    """The whole reply; generation stops if the client disconnects first."""
    cancel = threading.Event()
    watcher: asyncio.Task[Any] = asyncio.create_task(_watch_disconnect(request, cancel))
    try:
        return await backend.complete(chat, cancel)
    finally:
        cancel.set()
        watcher.cancel()
