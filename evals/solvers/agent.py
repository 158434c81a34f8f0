"""The agent loop: the model steers its own calls under the loop policy (``harness.loop``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.client import ChatClient
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.state import RunState
from harness.trace import Recorder
from harness.workspace import Workspace

if TYPE_CHECKING:
    from evals.environments import Setup
    from evals.tasks import Task


class Agent:
    def __init__(self) -> None:
        self.name = "agent"
        self.help = "the agent loop under the loop policy (the default)"
        self.settings: dict[str, Any] = {}

    async def solve(
        self,
        task: Task,
        environment: str,
        state: RunState,
        client: ChatClient,
        setup: Setup,
        workspace: Workspace,
        config: LoopConfig,
        recorder: Recorder,
    ) -> RunState:
        return await run_loop(
            state, client, setup.tools, workspace, config, recorder, intro=setup.intro
        )


AGENT = Agent()
