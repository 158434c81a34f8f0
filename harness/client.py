"""The provider client: one chat completion over HTTP, in the OpenAI wire shape.

:class:`ProviderClient` holds what every wire shape shares (retries, cancellation, errors); a
shape is the request it sends and how it reads the reply (``harness.messages_client`` for the
Anthropic Messages shape, ``harness.providers`` to pick one by name).

Transient failures (HTTP 429, 5xx, connection errors) are retried a bounded number of times
with exponential backoff and jitter, honouring ``retry-after-ms`` / ``Retry-After`` (waited in
full, plus a little jitter, up to a bound); other errors are raised at once, a refused key as
:class:`KeyRefused`. A cancellation token ends the call (and any wait) immediately. A hosted
endpoint's key (``harness.keys``) travels in the client's headers only.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import ssl
import time
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from harness.cancel import Cancelled, CancelToken
from harness.errors import KeyRefused, ProviderError
from harness.keys import KeyFrom, auth_headers, key_refused, refuses_key, scrubbed

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


def base_url_from_env() -> str:
    return os.environ.get("LLM_BASE_URL", DEFAULT_BASE_URL).rstrip("/")


@dataclass
class ModelReply:
    message: dict[str, Any]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    model: str
    timings: dict[str, Any] | None = None
    retries: int = 0
    waited_s: float = 0.0  # time spent waiting between those retries (Retry-After, backoff)
    api: str = "openai"  # the wire shape; finish_reason is in its vocabulary
    stop_sequence: str | None = None
    # Calls the server refused to make (name, arguments, reason), where it says (serve_local).
    refused_calls: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class TurnOptions:
    """What one request asks of the server besides messages and tools; None: not sent."""

    tool_choice: str | dict[str, Any] | None = None  # "required", or one named function
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    repetition_penalty: float | None = None  # vLLM's name; serve_local also reads it
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    temperature: float | None = None  # None: greedy (the request's temperature stays 0)
    seed: int | None = None

    def payload(self, with_tools: bool) -> dict[str, Any]:
        """The request fields; the tool fields only when tools are offered (else invalid)."""
        fields = {k: v for k, v in vars(self).items() if v is not None}
        if not with_tools:
            fields.pop("tool_choice", None)
            fields.pop("parallel_tool_calls", None)
        return fields


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    # The longest Retry-After honoured; a server that asks for more is not retried.
    max_retry_after_s: float = 120.0

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before retry ``attempt``; None: do not retry (the server asked
        for a longer wait than the retry policy allows)."""
        if error.retry_after_s is not None:
            if error.retry_after_s > self.max_retry_after_s:
                return None
            # Waited in full, then a little more, so clients told the same time spread out.
            return error.retry_after_s + random.uniform(0, min(1.0, 0.1 * error.retry_after_s))
        ceiling = min(self.max_delay_s, self.base_delay_s * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)  # "equal jitter"


def server_said(response: httpx.Response) -> str:
    """The error message an answer carries (OpenAI's shape), or its text, cut."""
    try:
        body = response.json()
        return str(body["error"]["message"])[:500]
    except (ValueError, KeyError, TypeError):
        return response.text[:500] or response.reason_phrase


def _context_overflow(response: httpx.Response) -> bool:
    """Whether a 400 says the prompt does not fit the context (OpenAI's and our code,
    llama-server's type, or vLLM's words)."""
    try:
        error = response.json()["error"]
        said = f"{error.get('code')} {error.get('type')} {error.get('message')}".lower()
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return any(
        mark in said
        for mark in (
            "context_length_exceeded",
            "exceed_context_size",
            "maximum context length",
            "model's context is",
        )
    )


def _retry_after(response: httpx.Response) -> float | None:
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value is not None:
            try:
                return max(0.0, float(value) / scale)
            except ValueError:
                continue
    return None


class ChatClient(Protocol):
    """What the loop talks to: one provider, or a pool of servers answering turn by turn."""

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: CancelToken | None = None,
        options: TurnOptions | None = None,
    ) -> ModelReply: ...


class ProviderClient:
    api = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,  # tests: a fake provider in-process
        key: KeyFrom | None = None,
    ) -> None:
        self.base_url = (base_url or base_url_from_env()).rstrip("/")
        self.retry = retry or RetryPolicy()
        self.key = key or KeyFrom()
        self._secret = self.key.read()  # only for scrubbing what servers send back
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout_s,
            transport=transport,
            verify=tls_context(),
            headers=auth_headers(self.api, self._secret),
        )

    async def __aenter__(self) -> ProviderClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: CancelToken | None = None,
        options: TurnOptions | None = None,
    ) -> ModelReply:
        """One completion, retried on transient errors; raises Cancelled if the token fires."""
        cancel = cancel or CancelToken()
        options = options or TurnOptions()
        attempt, waited = 0, 0.0
        while True:
            try:
                reply = await _until_cancelled(self._once(model, messages, tools, options), cancel)
                reply.retries, reply.waited_s = attempt, round(waited, 3)
                return reply
            except KeyRefused:
                raise  # no retry gives a refused key a better answer
            except ProviderError as exc:
                delay = self.retry.delay(attempt, exc) if exc.retryable else None
                if delay is None or attempt >= self.retry.max_retries:
                    if attempt or (exc.retryable and delay is None):
                        why = (
                            f"gave up after {attempt} retries ({waited:.1f} s waited)"
                            if delay is not None or not exc.retry_after_s
                            else f"asked to wait {exc.retry_after_s:g} s, more than "
                            f"{self.retry.max_retry_after_s:g} s"
                        )
                        raise ProviderError(
                            f"{exc} ({why})", status=exc.status, unavailable=exc.unavailable
                        ) from exc
                    raise
                await cancel.sleep(delay)
                waited += delay
                attempt += 1

    async def _once(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: TurnOptions,
    ) -> ModelReply:
        path, payload = self.request(model, messages, tools, options)
        start = time.perf_counter()
        try:
            response = await self._http.post(path, json=payload)
        except httpx.TransportError as exc:
            raise ProviderError(
                f"cannot reach the model server at {self.base_url} ({exc.__class__.__name__}: "
                f"{scrubbed(str(exc), self._secret)}). Start it with `make serve-local` (or "
                "`make serve-scripted`) or set LLM_BASE_URL.",
                retryable=True,
            ) from exc
        latency_ms = (time.perf_counter() - start) * 1000
        if refuses_key(response.status_code, self._secret):
            raise key_refused(self.base_url, self.key, response.status_code, server_said(response))
        if response.status_code >= 400:
            status = response.status_code
            raise ProviderError(
                f"the model server answered {status}: "
                f"{scrubbed(server_said(response), self._secret)}",
                status=status,
                retryable=status == 429 or status >= 500,
                retry_after_s=_retry_after(response),
                # Refused for reasons that are not the conversation's (who asks, which model,
                # load, a fault): the machinery's failure. A 400 is the request's.
                unavailable=status in (401, 403, 404, 408, 429) or status >= 500,
                context_overflow=status == 400 and _context_overflow(response),
            )
        return self.parse(response, latency_ms)

    def request(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: TurnOptions | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """The path and body of one request for ``messages`` in this wire shape."""
        sent = [{k: v for k, v in m.items() if k != "is_error"} for m in messages]
        payload: dict[str, Any] = {"model": model, "messages": sent, "temperature": 0}
        if tools:
            payload["tools"] = tools
        payload.update((options or TurnOptions()).payload(bool(tools)))
        return "/chat/completions", payload

    def parse(self, response: httpx.Response, latency_ms: float) -> ModelReply:
        return parse_reply(response, latency_ms)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client: building one reads the whole CA bundle (about 40 ms),
    and a run makes a client per task. A one-off request (``httpx.get``) builds one too unless
    it is given this one as ``verify``."""
    return httpx.create_ssl_context()


async def _until_cancelled(work: Any, cancel: CancelToken) -> ModelReply:
    task: asyncio.Task[ModelReply] = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        # The caller was cancelled (its task group stopping, say): the request stops with it
        # and has stopped before this returns, so nothing is left in flight behind a run.
        task.cancel()
        await asyncio.wait({task})
        raise
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    raise Cancelled(cancel.reason or "cancelled")


def parse_reply(response: httpx.Response, latency_ms: float) -> ModelReply:
    try:
        body = response.json()
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        return ModelReply(
            message=assistant_message(choice["message"]),
            finish_reason=clean_text(str(choice.get("finish_reason") or "stop")),
            prompt_tokens=max(0, int(usage.get("prompt_tokens", 0))),
            completion_tokens=max(0, int(usage.get("completion_tokens", 0))),
            latency_ms=latency_ms,
            model=clean_text(str(body.get("model", ""))),
            timings=body.get("timings") if isinstance(body.get("timings"), dict) else None,
            refused_calls=refused_calls(body),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError) as exc:
        raise ProviderError(
            f"the model server sent a reply that is not a chat completion: {response.text[:300]!r}"
        ) from exc


def refused_calls(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The calls a server says it refused to make, each as text fields; None when it says none."""
    sent = body.get("refused_calls")
    if not isinstance(sent, list):
        return None
    return [
        {key: _as_text(item.get(key, "")) for key in ("name", "arguments", "reason")}
        for item in sent
        if isinstance(item, dict)
    ] or None


def assistant_message(raw: dict[str, Any]) -> dict[str, Any]:
    """The reply's message in the shape the loop stores and sends back, whatever was sent.

    Only the fields the loop reads are kept, as text: a server may send content as parts,
    arguments as an object, or a string no file can hold (a lone surrogate).
    """
    message: dict[str, Any] = {"role": "assistant", "content": _content(raw.get("content"))}
    calls = raw.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise TypeError("tool_calls is not a list")
        message["tool_calls"] = [_tool_call(call) for call in calls]
    if raw.get("refusal"):
        message["refusal"] = _as_text(raw["refusal"])
    return message


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    name, arguments, call_id = function.get("name"), function.get("arguments"), call.get("id")
    return {
        "id": clean_text(call_id) if isinstance(call_id, str) else "",
        "type": "function",
        "function": {
            "name": clean_text(name) if isinstance(name, str) else "",
            "arguments": "{}" if arguments is None else _as_text(arguments),
        },
    }


def _content(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        return clean_text("".join(str(p.get("text", "")) for p in value))
    return _as_text(value)


def _as_text(value: Any) -> str:
    return clean_text(value if isinstance(value, str) else json.dumps(value))


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8 (JSON escapes can carry lone surrogates, which cannot)."""
    return text.encode("utf-8", "replace").decode("utf-8")
