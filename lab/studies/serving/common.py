"""What the benchmark parts share: a part's shape, the recorded six-task transcripts and the
request every replay sends. Servers in their own processes are ``serve_local.process``'s."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from evals.tasks import load_tasks
from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from serve_local.models import QWEN_CODER
from serve_local.process import free_port, server_process

__all__ = ["free_port", "server_process"]

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
    # Blocks of the docs its figures write: (page, block name, text), see lab.report.docs.
    docs: Callable[[Figures], list[tuple[Path, str, str]]] | None = None
    # For a part whose figures include verdicts of its committed run files: those figures
    # again from the files as they read now (after ``python -m lab rescore``), nothing
    # measured again.
    rescored: Callable[[Figures], Figures] | None = None
    # bench.md's heading above its section, for a part whose lines have none (they also fill a
    # docs block, under the page's own heading).
    heading: str | None = None


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
                    Setup(default_tools(), create_workspace(folder)),
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
