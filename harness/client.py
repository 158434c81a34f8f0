"""The provider client: one chat completion over HTTP, in the OpenAI wire shape."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import httpx

from harness.errors import ProviderError

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


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
        return str(body["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500] or response.reason_phrase


class ProviderClient:
    def __init__(self, base_url: str | None = None, timeout_s: float = 600.0) -> None:
        self.base_url = (base_url or base_url_from_env()).rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_s)

    async def __aenter__(self) -> ProviderClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def chat(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply:
        payload: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
        if tools:
            payload["tools"] = tools
        start = time.perf_counter()
        try:
            response = await self._http.post("/chat/completions", json=payload)
        except httpx.TransportError as exc:
            raise ProviderError(
                f"cannot reach the model server at {self.base_url} ({exc.__class__.__name__}: "
                f"{exc}). Start it with `make serve-local` (or `make serve-scripted`) or set "
                "LLM_BASE_URL."
            ) from exc
        latency_ms = (time.perf_counter() - start) * 1000
        if response.status_code >= 400:
            raise ProviderError(
                f"the model server answered {response.status_code}: {_error_text(response)}",
                status=response.status_code,
            )
        return parse_reply(response, latency_ms)


def parse_reply(response: httpx.Response, latency_ms: float) -> ModelReply:
    try:
        body = response.json()
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        message = dict(choice["message"])
        return ModelReply(
            message={k: v for k, v in message.items() if v is not None or k == "content"},
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_ms=latency_ms,
            model=str(body.get("model", "")),
            timings=body.get("timings"),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProviderError(
            f"the model server sent a reply that is not a chat completion: {response.text[:300]!r}"
        ) from exc
