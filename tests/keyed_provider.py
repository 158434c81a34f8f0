"""A hosted provider as tests meet one: this project's scripted server behind a key it checks
(``Authorization: Bearer`` for the OpenAI shape, ``x-api-key`` with ``anthropic-version`` for
Messages) on every path, its model listing included (401 without the key, 404 with it), rate
limits answered 429 with ``Retry-After``, and a record of every request it was sent. A wrong
key is answered 401 with the key echoed back, as some providers do, so a test can see that no
message carries it on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend


@dataclass
class Sent:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class KeyedProvider:
    """The ASGI app: ``key`` required; every ``limit_every``-th chat request (1-based) answered
    429 with ``Retry-After: retry_after`` first; ``sent``: every request as received."""

    key: str
    limit_every: int = 3
    retry_after: str = "1"
    sent: list[Sent] = field(default_factory=list)
    chats: int = 0
    limited: int = 0
    inner: ASGIApp = field(default_factory=lambda: create_app(ScriptedBackend()))

    def _key_of(self, request: Request) -> str | None:
        bearer = request.headers.get("authorization", "")
        if bearer.startswith("Bearer "):
            return bearer.removeprefix("Bearer ")
        if request.headers.get("anthropic-version"):
            return request.headers.get("x-api-key")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request = Request(scope, receive)
        body = await request.body()
        self.sent.append(Sent(request.url.path, dict(request.headers), body))
        given = self._key_of(request)
        answer: Response | None = None
        if given != self.key:
            said = f"Incorrect API key provided: {given}" if given else "No API key provided"
            answer = JSONResponse(
                {"error": {"message": said, "type": "invalid_request_error", "code": "401"}},
                status_code=401,
            )
        elif request.url.path.endswith("/models"):  # it lists no models
            answer = JSONResponse({"error": {"message": "not found"}}, status_code=404)
        elif request.url.path.endswith(("/chat/completions", "/messages")):
            self.chats += 1
            if self.chats % self.limit_every == 0 and self.chats // self.limit_every > self.limited:
                self.limited += 1
                answer = JSONResponse(
                    {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                    status_code=429,
                    headers={"Retry-After": self.retry_after},
                )
        if answer is not None:
            await answer(scope, receive, send)
            return
        await self.inner(scope, _replayed(body), send)


def _replayed(body: bytes) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A ``receive`` that hands the inner app the body already read."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
