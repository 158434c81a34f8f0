"""The harness's own milliseconds per turn against a zero-latency scripted provider."""

from __future__ import annotations

import asyncio
import tempfile

from evals.markdown import table
from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from lab.studies.serving.common import Echo, Figures, Part, median, verdict
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server


async def _harness_ms(url: str, model: str, cap: int) -> tuple[float, int]:
    state = new_run(model, "Which file mentions a timeout?")
    with tempfile.TemporaryDirectory() as folder:
        async with ProviderClient(url) as client:
            await run_loop(
                state,
                client,
                Setup(default_tools(), create_workspace(folder)),
                LoopConfig(max_turns=cap),
            )
    return state.harness_ms, state.turns


def run(echo: Echo) -> Figures:
    rows = []
    with running_server(create_app(ScriptedBackend())) as url:
        asyncio.run(_harness_ms(url, "scripted:plan", 20))  # warm
        for model, cap in [
            ("scripted:plan", 20),
            ("scripted:runaway", 8),
            ("scripted:runaway", 25),
            ("scripted:runaway", 50),
            ("scripted:runaway", 100),
        ]:
            samples = [asyncio.run(_harness_ms(url, model, cap)) for _ in range(5)]
            turns = samples[0][1]
            per_turn = median([ms / turns for ms, _ in samples]) or 0.0
            rows.append(
                {
                    "run": f"{model.removeprefix('scripted:')} cap {cap}",
                    "turns": turns,
                    "harness_ms_median": round(median([ms for ms, _ in samples]) or 0, 2),
                    "harness_ms_per_turn": round(per_turn, 3),
                }
            )
            echo(f"   {rows[-1]}")
    return {"rows": rows}


def render(figures: Figures) -> list[str]:
    rows = figures["rows"]
    at8 = next(r for r in rows if r["run"] == "runaway cap 8")["harness_ms_per_turn"]
    at100 = next(r for r in rows if r["run"] == "runaway cap 100")["harness_ms_per_turn"]
    return [
        "## The harness's own time (zero-latency scripted provider, 5 runs each)",
        "",
        table(
            ["run", "turns", "harness ms (median)", "harness ms per turn"],
            [
                [r["run"], r["turns"], str(r["harness_ms_median"]), str(r["harness_ms_per_turn"])]
                for r in rows
            ],
        ),
        f"- Target under 2 ms per turn at turn 8: {at8} ms, {verdict(at8 < 2)}.",
        f"- Per-turn cost at 100 turns over at 8: {at100 / max(at8, 1e-9):.1f}x "
        "(the transcript is about 12x longer at 100 turns; linear growth in transcript "
        "size allows up to that).",
        "",
    ]


PART = Part("harness", run, render)
