"""``parallel_tool_calls``: off asks the server for one call per reply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.policies.base import LoopPolicy, Setting, TurnPlan

if TYPE_CHECKING:
    from harness.config import LoopConfig
    from harness.state import RunState

PARALLEL: Setting[bool] = Setting(
    "parallel_tool_calls", True, "several calls in one reply (off: one call per reply)", "bool"
)


class Parallel(LoopPolicy):
    name = "parallel_tool_calls"
    settings = (PARALLEL,)

    def plan(self, state: RunState, config: LoopConfig, plan: TurnPlan) -> None:
        # On is every server's default; sent only when off, so the plain loop's requests stay
        # as they were.
        if not PARALLEL.of(config):
            plan.options["parallel_tool_calls"] = False


POLICY = Parallel()
