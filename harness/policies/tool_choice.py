"""``tool_choice``: the first reply (``required``, or a tool's name) or every reply (``always``)
must call a tool."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting, TurnPlan, named
from harness.state import RunState

TOOL_CHOICE: Setting[str] = Setting(
    "tool_choice",
    "auto",
    "required: the first reply must call a tool; always: every reply must; a tool's name: the "
    "first reply must call that tool (any tool, where that one is not offered)",
    "text",
    metavar="auto|required|always|TOOL",
    doc=(
        "`required`: the first reply must call a tool; `always`: every reply must; a tool's name: "
        "the first reply must call that tool (any tool, where that one is not offered)"
    ),
)


class ToolChoice(Hook):
    name = "tool_choice"
    settings = (TOOL_CHOICE,)

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        choice = TOOL_CHOICE.of(config)
        if choice == "always" or (choice == "required" and state.turns == 0):
            plan.require("required")
        elif choice not in ("auto", "required") and state.turns == 0:
            offered = {t.get("function", {}).get("name") for t in plan.tools}
            # A tool this run does not offer (another environment's) cannot be forced: the
            # first reply must still call one.
            plan.require(named(choice) if choice in offered else "required")


HOOK = ToolChoice()
