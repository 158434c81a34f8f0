"""The app around any backend: 503 while loading, a failed load, a client that goes away."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from serve_local.app import create_app
from serve_local.backends.base import Completion
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from serve_local.schema import ChatRequest
from tests.helpers import wait_ready


class GatedBackend(ScriptedBackend):
    """Loads only when the test says so; records whether a generation was cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.loaded = False
        self.fail_with: str | None = None
        self.cancel_seen = threading.Event()

    @property
    def ready(self) -> bool:
        return self.loaded

    def load(self) -> None:
        self.release.wait()
        if self.fail_with:
            raise RuntimeError(self.fail_with)
        self.loaded = True

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        if request.model == "scripted:hang":
            assert cancel is not None
            while not cancel.is_set():
                await asyncio.sleep(0.01)
            self.cancel_seen.set()
            return Completion(model=request.model, content="", finish_reason="stop")
        return await super().complete(request, cancel)


def test_health_is_503_while_loading_then_200() -> None:
    backend = GatedBackend()
    with running_server(create_app(backend)) as url:
        root = url.removesuffix("/v1")
        assert httpx.get(f"{root}/health").status_code == 503
        early = httpx.post(
            f"{url}/chat/completions",
            json={"model": "scripted:plan", "messages": [{"role": "user", "content": "q"}]},
        )
        assert early.status_code == 503 and "loading" in early.json()["error"]["message"]
        backend.release.set()
        wait_ready(url, timeout_s=30)
        assert httpx.get(f"{root}/health").json()["status"] == "ok"


def test_a_failed_load_is_reported_and_calls_back() -> None:
    backend = GatedBackend()
    backend.fail_with = "weights are corrupt"
    failed = threading.Event()
    with running_server(create_app(backend, on_load_failure=failed.set)) as url:
        backend.release.set()
        assert failed.wait(timeout=30)
        health = httpx.get(f"{url.removesuffix('/v1')}/health")
        assert health.status_code == 500 and "weights are corrupt" in health.json()["error"]


def test_a_client_that_disconnects_cancels_its_generation() -> None:
    backend = GatedBackend()
    backend.release.set()
    with running_server(create_app(backend)) as url:
        wait_ready(url, timeout_s=30)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{url}/chat/completions",
                timeout=0.5,
                json={"model": "scripted:hang", "messages": [{"role": "user", "content": "q"}]},
            )
        assert backend.cancel_seen.wait(timeout=30)
