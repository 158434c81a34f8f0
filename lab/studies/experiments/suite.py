"""Every experiment by name; run them against scripted servers started here, write the results."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path

import httpx

from lab.studies.experiments import costs, delegation, failures, recovery, stops, timing, writes
from lab.studies.experiments.common import Env, Result
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server

Experiment = Callable[[Env], Awaitable[Result]]
EXPERIMENTS: dict[str, Experiment] = {
    "plan": costs.exp_plan,
    "caps": costs.exp_caps,
    "budgets": costs.exp_budgets,
    "policies": failures.exp_policies,
    "permanent": failures.exp_permanent,
    "duplicate": costs.exp_duplicate,
    "writes": writes.exp_writes,
    "approval": writes.exp_approval,
    "crash": recovery.exp_crash,
    "cancel": recovery.exp_cancel,
    "latency": timing.exp_latency,
    "subagent": delegation.exp_subagent,
    "finish": failures.exp_finish,
    "stops": stops.exp_stops,
}
LATENCIES = (0, 50, 200, 1000)


async def run_experiments(names: list[str], echo: Callable[[str], None] = print) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory(prefix="loopbench-exp-") as scratch, ExitStack() as stack:
        urls = {
            ms: stack.enter_context(running_server(create_app(ScriptedBackend(ms))))
            for ms in LATENCIES
        }
        env = Env(url=urls[0], scratch=Path(scratch), latency_urls=urls)
        for url in urls.values():  # the first request of a server loads the BPE tables
            httpx.get(f"{url}/models", timeout=10)
            httpx.post(
                f"{url}/chat/completions",
                timeout=30,
                json={"model": "scripted:plan", "messages": [{"role": "user", "content": "warm"}]},
            )
        for name in names:
            started = time.perf_counter()
            result = await EXPERIMENTS[name](env)
            echo(f"{name}: {time.perf_counter() - started:.1f} s")
            results.append(result)
    return results


def write(results: list[Result], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    intro = (
        "# Experiments\n\nThe chapter's measurements, rerun through this harness against "
        "the scripted provider over real HTTP (`make experiments`). Absolute token counts "
        "differ from the chapter's (our system prompt, tool schemas and files are our own); "
        "the shapes and ratios are the point.\n\n"
    )
    (folder / "experiments.md").write_text(intro + "\n".join(r.markdown() for r in results))
    data = {r.name: {"title": r.title, "table": r.table, "figures": r.figures} for r in results}
    (folder / "experiments.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
