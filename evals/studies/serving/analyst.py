"""The SQL analyst's turns on the default model: how much of each turn's prompt the prefix
cache carries (the schema and every earlier result are the prefix), and the wall time per
question with parallel tool calls on and off, side by side on the same questions and server.

The share reused is ``cache_n / (cache_n + prompt_n)``: llama.cpp's ``prompt_n`` counts the
tokens evaluated, ``cache_n`` those taken from the cache. Wall time is shown, never ranked by.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from evals.report.markdown import table
from evals.run.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.studies.serving.common import Echo, Figures, Part, server_process, verdict
from harness.policies.presets import Policy, preset, preset_limits
from serve_local.models import QWEN_CODER

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "sql-test-s1000-n60.json"
QUESTIONS = 6  # the first six of the test set: one of each of six kinds
TARGET = 0.9


def _subset(folder: Path) -> Path:
    data = json.loads(TASKS.read_text(encoding="utf-8"))
    data["tasks"] = data["tasks"][:QUESTIONS]
    data["name"] = f"{data['name']}-first{QUESTIONS}"
    path = folder / "tasks.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _shares(records: list[Any]) -> dict[int, list[float]]:
    """Per turn index (1-based): the share of the prompt each turn took from the cache."""
    found: dict[int, list[float]] = {}
    for r in records:
        for i, t in enumerate(r.turn_timings or [], start=1):
            if t and (t.get("prompt_n") or 0) + (t.get("cache_n") or 0):
                found.setdefault(i, []).append(t["cache_n"] / (t["cache_n"] + t["prompt_n"]))
    return found


def run(echo: Echo) -> Figures:
    analyst = preset("analyst")
    limits = preset_limits("analyst")
    off = Policy("analyst+parallel_tool_calls", {**analyst.settings, "parallel_tool_calls": False})
    cmd = [sys.executable, "-m", "serve_local", "--backend", "llama", "--model", QWEN_CODER]
    figures: dict[str, Any] = {}
    with server_process(cmd) as (url, _, _), tempfile.TemporaryDirectory() as scratch:
        tasks = _subset(Path(scratch))
        for label, policy in (("parallel on", analyst), ("parallel off", off)):
            settings = EvalSettings(
                base_url=url, tasks=tasks, policy=policy, max_turns=limits["max_turns"],
                task_timeout_s=limits["task_timeout_s"], out=Path(scratch) / f"{label}.jsonl",
            )  # fmt: skip
            records = read_runs(asyncio.run(run_eval(settings, echo=lambda _: None)))
            shares = _shares(records)
            figures[label] = {
                "correct": sum(r.correct for r in records),
                "questions": len(records),
                "turns": [r.turns for r in records],
                "wall_ms": [r.wall_ms for r in records],
                "median_wall_ms": statistics.median(r.wall_ms for r in records),
                "parallel_turns": sum(
                    1 for r in records for n in _per_turn(r.audit or []).values() if n > 1
                ),
                "reuse_by_turn": {str(i): statistics.median(v) for i, v in sorted(shares.items())},
                "min_reuse_after_first": min(
                    (x for i, v in shares.items() if i >= 2 for x in v), default=None
                ),
            }
            echo(f"   {label}: {figures[label]['reuse_by_turn']}")
    figures["questions"] = QUESTIONS
    return figures


def _per_turn(audit: list[dict[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for a in audit:
        counts[int(a["turn"])] = counts.get(int(a["turn"]), 0) + 1
    return counts


def render(p: Figures) -> list[str]:
    on, off = p["parallel on"], p["parallel off"]
    turns = sorted({*on["reuse_by_turn"], *off["reuse_by_turn"]}, key=int)
    rows = [[t, _pct(on["reuse_by_turn"].get(t)), _pct(off["reuse_by_turn"].get(t))] for t in turns]
    low = on["min_reuse_after_first"]
    ratio = on["median_wall_ms"] / off["median_wall_ms"] if off["median_wall_ms"] else None
    return [
        f"## The SQL analyst's turns ({p['questions']} questions of the sql test set)",
        "",
        "Share of each turn's prompt taken from the prefix cache, "
        "`cache_n / (cache_n + prompt_n)`, median over the questions:",
        "",
        table(["turn", "parallel on", "parallel off"], rows),
        "",
        f"- Target: from turn 2 on, above {TARGET:.0%}. Lowest from turn 2 on (parallel on): "
        f"{_pct(low)}, {verdict(low is not None and low > TARGET)}.",
        f"- Median wall per question: {on['median_wall_ms'] / 1000:,.1f} s with parallel calls "
        f"on, {off['median_wall_ms'] / 1000:,.1f} s off"
        + (f" (ratio {ratio:.2f})" if ratio else "")
        + f"; turns with more than one call: {on['parallel_turns']} on, "
        f"{off['parallel_turns']} off. Correct: {on['correct']}/{on['questions']} on, "
        f"{off['correct']}/{off['questions']} off.",
        "",
    ]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


PART = Part("analyst", run, render)
