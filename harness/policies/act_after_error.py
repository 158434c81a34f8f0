"""``act_after_error``: the reply after a failed call must call a tool, so an error is met with
another look rather than with advice to the user."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting, TurnPlan
from harness.state import RunState

ACT_AFTER_ERROR: Setting[bool] = Setting(
    "act_after_error",
    False,
    "the reply after a failed call must call a tool",
    "bool",
    doc=(
        "the reply after a failed call must call a tool, so an error is met with another look, not "
        "with advice to the user"
    ),
)


def just_failed(state: RunState) -> bool:
    """A call of the newest reply failed (refused, not found, declined...)."""
    return any(not run.ok for run in state.tool_log if run.turn == state.turns)


class ActAfterError(Hook):
    name = "act_after_error"
    settings = (ACT_AFTER_ERROR,)

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if ACT_AFTER_ERROR.of(config) and just_failed(state):
            plan.require("required")


HOOK = ActAfterError()
