"""``required_turns``: the first N replies must call a tool, so an answer comes only after that
many looks (after a first-turn ``tool_choice``, if any)."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting, TurnPlan
from harness.state import RunState

REQUIRED_TURNS: Setting[int] = Setting(
    "required_turns",
    0,
    "the first N replies must call a tool (after a first-turn --tool-choice)",
    "int",
    metavar="N",
    doc=(
        "the first N replies must call a tool (after a first-turn `--tool-choice TOOL`), so no "
        "answer comes before N looks"
    ),
)


class RequiredTurns(Hook):
    name = "required_turns"
    settings = (REQUIRED_TURNS,)

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if state.turns < REQUIRED_TURNS.of(config):
            plan.require("required")


HOOK = RequiredTurns()
