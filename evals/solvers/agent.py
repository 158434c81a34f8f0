"""The agent loop: the model steers its own calls under its preset's settings (``harness.loop``)."""

from __future__ import annotations

from typing import Any

from evals.solvers.base import TaskRun
from harness.loop import run_loop
from harness.state import RunState


class Agent:
    def __init__(self) -> None:
        self.name = "agent"
        self.help = "the agent loop under the preset (the default)"
        self.settings: dict[str, Any] = {}

    async def solve(self, run: TaskRun) -> RunState:
        return await run_loop(run.state, run.client, run.setup, run.config, run.recorder)


AGENT = Agent()
