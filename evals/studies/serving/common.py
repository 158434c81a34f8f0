"""What the benchmark parts share: a part's shape, servers in their own processes, the recorded
six-task transcripts and the request every replay sends."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from evals.tasks import load_tasks
from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from serve_local.models import QWEN_CODER

MAX_TOKENS = 256
RECORD_TURNS = 4
TOOLS = [t.spec() for t in default_tools()]
Echo = Callable[[str], None]
Figures = dict[str, Any]


@dataclass(frozen=True)
class Part:
    """One benchmark: ``run`` measures and returns its figures (kept in bench.json), ``render``
    turns those figures into its section of bench.md."""

    name: str
    run: Callable[[Echo], Figures]
    render: Callable[[Figures], list[str]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(args: list[str], timeout_s: float = 900) -> Iterator[tuple[str, float, int]]:
    """A server in its own process; yields (base URL, seconds until ready, pid)."""
    port = free_port()
    fd, log_name = tempfile.mkstemp(prefix="bench-server-", suffix=".log")
    started = time.perf_counter()
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen([*args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{args[:4]} exited; see {log_name}")
            if time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"{args[:4]} did not get ready; see {log_name}")
            try:
                ok = httpx.get(f"{url}/v1/models", timeout=2).status_code == 200
                health = httpx.get(f"{url}/health", timeout=2).status_code
                if ok and health in (200, 404):  # llama_cpp.server has no /health
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield f"{url}/v1", time.perf_counter() - started, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def per_token(ms: Any, n: Any) -> float | None:
    """Milliseconds per token from a server's timings; None when either is missing or n is 0."""
    return ms / n if isinstance(ms, (int, float)) and isinstance(n, int) and n > 0 else None


def median_of(values: list[float | None]) -> float | None:
    """The median of the values a server reported, to 3 decimals; None when there are none."""
    found = median([v for v in values if v is not None])
    return None if found is None else round(found, 3)


def fmt(value: Any, spec: str = ".2f") -> str:
    """A table cell: the value formatted, or a dash when it is missing."""
    return "–" if value is None else format(value, spec)


def verdict(ok: bool) -> str:
    return "pass" if ok else "falls short"


async def record_transcripts(base_url: str, echo: Echo) -> list[list[list[dict[str, Any]]]]:
    """Run the six tasks on our server; every turn's request (messages) per task."""
    transcripts = []
    for task in load_tasks().tasks:
        state = new_run(QWEN_CODER, task.question)
        with tempfile.TemporaryDirectory() as folder:
            async with ProviderClient(base_url) as client:
                await run_loop(
                    state,
                    client,
                    default_tools(),
                    create_workspace(folder),
                    LoopConfig(max_turns=RECORD_TURNS),
                )
        transcripts.append(_requests_of(state))
        echo(f"   recorded {task.id}: {state.turns} turns")
    return transcripts


def _requests_of(state: RunState) -> list[list[dict[str, Any]]]:
    return [state.messages[:i] for i, m in enumerate(state.messages) if m["role"] == "assistant"]


def body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": QWEN_CODER,
        "messages": messages,
        "tools": TOOLS,
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }


def post(url: str, messages: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    response = httpx.post(f"{url}/chat/completions", json=body(messages), timeout=600)
    ms = (time.perf_counter() - start) * 1000
    return ms, (response.json() if response.status_code == 200 else {"error": response.text})
