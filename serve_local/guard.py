"""What every request passes before a route sees it: the ``Host`` it names, its content type,
and the size of its body, checked before the body is read.

- A server bound to a loopback address answers only requests whose ``Host`` is a loopback
  name (``127.0.0.1``, ``localhost``, ``::1``) or one allowed with ``--allow-host``: a web page
  that rebinds its own name to 127.0.0.1 cannot read the answers (403), as Jupyter does.
- A POST must say ``Content-Type: application/json`` (415): a web page can send a form or
  ``text/plain`` to any address without the browser asking first; JSON it cannot.
- A body longer than ``max_body_bytes`` is refused (413) from its ``Content-Length`` before a
  byte is read, or, sent without one, as soon as it passes the limit; a body that does not
  arrive within ``body_timeout_s`` is refused (408).

Errors have the shape of the route asked: the Messages shape under ``/v1/messages``, the
OpenAI shape elsewhere.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_MB = 4.0  # a chat request of 4 MB is a million tokens, past any context here
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = int(DEFAULT_MAX_BODY_MB * 1024 * 1024)
    body_timeout_s: float = 60.0
    # The Host names answered; None answers any (a server bound to a public address).
    allowed_hosts: frozenset[str] | None = field(default=LOOPBACK_NAMES)

    @classmethod
    def for_address(
        cls, host: str, allow: Iterable[str] = (), max_body_mb: float = DEFAULT_MAX_BODY_MB
    ) -> Limits:
        """The limits for a server bound to ``host``: the Host check only on a loopback
        address, widened by ``allow`` (``*``: any)."""
        allowed = set(allow)
        loopback = host in LOOPBACK_NAMES or host.startswith("127.")
        hosts = None if "*" in allowed or not loopback else LOOPBACK_NAMES | {host} | allowed
        return cls(max_body_bytes=int(max_body_mb * 1024 * 1024), allowed_hosts=hosts)


def host_name(value: str) -> str:
    """``Host`` without its port: ``127.0.0.1:8000`` → ``127.0.0.1``, ``[::1]:80`` → ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Refusal(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


_MESSAGES_TYPES = {
    403: "permission_error",
    408: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
}


def _body(path: str, refusal: Refusal) -> dict[str, Any]:
    if path.startswith("/v1/messages"):
        kind = _MESSAGES_TYPES.get(refusal.status, "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": refusal.message}}
    return {
        "error": {
            "message": refusal.message,
            "type": "invalid_request_error",
            "param": None,
            "code": refusal.code,
        }
    }


class Guard:
    """The ASGI middleware that applies :class:`Limits`."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self._check_host(headers.get("host", ""))
            if scope["method"] in ("POST", "PUT", "PATCH"):
                self._check_type(headers.get("content-type", ""))
                body = await self._read(headers.get("content-length"), receive)
                receive = _replay(body, receive)
        except Refusal as refusal:
            await _answer(send, refusal, _body(scope["path"], refusal))
            return
        await self.app(scope, receive, send)

    def _check_host(self, host: str) -> None:
        allowed = self.limits.allowed_hosts
        if allowed is not None and host_name(host) not in allowed:
            raise Refusal(
                403,
                f"Host {host!r} is not served: this server answers only requests addressed to "
                f"{', '.join(sorted(allowed))}. Start it with --allow-host NAME to add a name.",
                "host_not_allowed",
            )

    @staticmethod
    def _check_type(content_type: str) -> None:
        media = content_type.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise Refusal(
                415,
                f"Content-Type {content_type or 'missing'!r} is not accepted: send the body as "
                "JSON with 'Content-Type: application/json'.",
                "unsupported_media_type",
            )

    async def _read(self, length: str | None, receive: Receive) -> bytes:
        cap = self.limits.max_body_bytes
        too_big = Refusal(
            413,
            f"The request body is over this server's limit of {cap} bytes "
            f"({cap / 1024 / 1024:g} MB; --max-body-mb sets it).",
            "request_too_large",
        )
        if length is not None:
            if not length.strip().isdigit():
                raise Refusal(400, f"Content-Length {length!r} is not a number.", "invalid_length")
            if int(length) > cap:
                raise too_big
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.limits.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        break
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > cap:
                        raise too_big
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise Refusal(
                408,
                f"The request body did not arrive within {self.limits.body_timeout_s:g} s.",
                "request_timeout",
            ) from None
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, once, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(send: Send, refusal: Refusal, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if refusal.status in (408, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
