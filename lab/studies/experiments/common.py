"""What every experiment shares: the scripted servers it talks to, one loop run, one row."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.markdown import cell, table
from harness.cancel import CancelToken
from harness.client import RetryPolicy
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.providers import provider
from harness.scenarios import SCENARIO_TASKS
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.tools import Tool, default_tools
from harness.trace import Recorder
from harness.workspace import Workspace, create_workspace

FAST_RETRY = RetryPolicy(max_retries=4, base_delay_s=0.05, max_delay_s=0.2)


@dataclass
class Result:
    name: str
    title: str
    shows: str  # one sentence: what the table shows
    table: list[dict[str, Any]]
    figures: dict[str, Any] = field(default_factory=dict)

    def markdown(self) -> str:
        if not self.table:
            return ""
        head = list(self.table[0])
        lines = [
            f"## {self.title}",
            "",
            self.shows,
            "",
            table(head, [[r.get(k) for k in head] for r in self.table]).rstrip("\n"),
        ]
        if self.figures:
            lines += ["", ", ".join(f"{k} = {cell(v)}" for k, v in self.figures.items())]
        return "\n".join(lines) + "\n"


@dataclass
class Env:
    url: str  # zero-latency scripted server
    scratch: Path
    latency_urls: dict[int, str] = field(default_factory=dict)


async def drive(
    env: Env,
    model: str,
    *,
    url: str | None = None,
    task: str | None = None,
    state: RunState | None = None,
    tools: list[Tool] | None = None,
    workspace: Workspace | None = None,
    recorder: Recorder | None = None,
    cancel: CancelToken | None = None,
    api: str = "openai",
    **config: Any,
) -> tuple[RunState, Workspace]:
    scenario = model.removeprefix("scripted:").split("+")[0]
    state = state or new_run(model, task or SCENARIO_TASKS[scenario])
    workspace = workspace or create_workspace(env.scratch / state.run_id)
    async with provider(api, url or env.url, retry=FAST_RETRY) as client:
        await run_loop(
            state,
            client,
            Setup(tools or default_tools(), workspace),
            LoopConfig.of(**config),
            recorder,
            cancel,
        )
    return state, workspace


def row(label: str, s: RunState, **extra: Any) -> dict[str, Any]:
    return {
        "run": label,
        "turns": s.turns,
        "tools": s.tool_runs,
        "in": s.prompt_tokens,
        "out": s.completion_tokens,
        "cost": round(s.cost_usd, 6),
        "status": s.status,
        **extra,
    }
