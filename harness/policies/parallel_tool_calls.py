"""``parallel_tool_calls``: off asks the server for one call per reply."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting, TurnPlan
from harness.state import RunState

PARALLEL: Setting[bool] = Setting(
    "parallel_tool_calls",
    True,
    "several calls in one reply (off: one call per reply)",
    "bool",
    doc="off: at most one call per reply (sent as `parallel_tool_calls: false`)",
)


class Parallel(Hook):
    name = "parallel_tool_calls"
    settings = (PARALLEL,)

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        # On is every server's default; sent only when off, so the plain loop's requests stay
        # as they were.
        if not PARALLEL.of(config):
            plan.options["parallel_tool_calls"] = False


HOOK = Parallel()
