"""The app around any backend: 503 while loading, a failed load, a client that goes away."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

from harness.client import ProviderClient
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from serve_local.app import create_app
from serve_local.backends.base import Completion
from serve_local.backends.generation import Generated, GenerationQueue, LocalBackend
from serve_local.backends.scripted import ScriptedBackend
from serve_local.chat_template import ChatTemplate
from serve_local.inprocess import running_server
from serve_local.models import ResolvedModel
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


async def test_a_cancelled_request_keeps_the_model_until_its_thread_finishes() -> None:
    """A worker thread cannot be stopped; the next generation waits for it, never overlaps."""
    queue = GenerationQueue()
    order: list[str] = []
    first_started, release_first = threading.Event(), threading.Event()

    def first() -> Generated:
        order.append("first starts")
        first_started.set()
        release_first.wait(timeout=30)
        order.append("first ends")
        return Generated("", "stop", 0, 0, 0, 0.0, 0.0)

    def second() -> Generated:
        order.append("second starts")
        return Generated("", "stop", 0, 0, 0, 0.0, 0.0)

    cancelled = asyncio.create_task(queue.run(first))
    await asyncio.to_thread(first_started.wait, 30)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert queue.generating  # the request is gone, its thread is not
    waiting = asyncio.create_task(queue.run(second))
    release_first.set()
    await waiting
    assert order == ["first starts", "first ends", "second starts"]
    assert not queue.generating


class BrokenTemplateBackend(LocalBackend):
    """A model backend whose chat template fails with a plain Python error on every request."""

    def __init__(self) -> None:
        super().__init__(ResolvedModel("broken", Path("broken.gguf"), "gguf", "file"), 512, 1)
        self._template = ChatTemplate("{{ messages[0]['content'] + 1 }}")  # str + int
        self.requests = 0

    @property
    def ready(self) -> bool:
        return True

    def load(self) -> None:
        return None

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        self.requests += 1
        return await super().complete(request, cancel)


async def test_a_template_error_is_a_400_the_harness_does_not_retry(tmp_path: Path) -> None:
    backend = BrokenTemplateBackend()
    with running_server(create_app(backend)) as url:
        response = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "q"}]},
        )
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "template_error"
        assert "chat template rejected" in response.json()["error"]["message"]
        state = new_run("m", "q")
        async with ProviderClient(url) as client:
            await run_loop(state, client, Setup(default_tools(), create_workspace(tmp_path)))
    assert state.status == "failed" and state.error is not None
    assert "400" in state.error and "retries" not in state.error
    assert backend.requests == 2  # the probe above, then the harness's single attempt
