"""``repeat_guard``: a read-only call identical to an earlier one is answered with the earlier
result and a note; under ``answer`` the next turn is asked without tools, under ``submit`` it
must call submit (when offered)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from harness.errors import Repeated
from harness.policies.base import Config, Hook, Setting, TurnPlan, named
from harness.policies.submit import SUBMIT, SUBMIT_ON
from harness.state import Call, RunState, asked_calls, result_text, signature
from harness.toolrun import ToolOutcome
from harness.tools import Tool

REPEAT_END = "this is its earlier result. Use it, or do something else.]"
REPEAT_NOTE = "\n\n[You already made this exact call (turn {turn}); " + REPEAT_END

GUARD: Setting[Literal["off", "note", "answer", "submit"]] = Setting(
    "repeat_guard",
    "off",
    "a repeated read-only call gets its earlier result and a note; answer: the next turn is "
    "asked without tools; submit: the next turn must call submit",
    "choice",
    choices=("off", "note", "answer", "submit"),
    doc=(
        "a read-only call identical to an earlier one is not run again: it gets the earlier result "
        "with a note that it was already made; `answer` then asks the next turn without tools, for "
        "the answer; `submit` then requires a call of `submit` (when it is offered)"
    ),
)


def just_repeated(state: RunState) -> bool:
    """The newest tool results include one the guard answered: read from the tool log's typed
    record, so no file content can switch the guard's effect on."""
    return any(run.repeated for run in state.tool_log if run.turn == state.turns)


class RepeatGuard(Hook):
    name = "repeat_guard"
    settings = (GUARD,)

    def answer_call(
        self, state: RunState, config: Config, tools: Mapping[str, Tool], call: Call
    ) -> tuple[ToolOutcome, str] | None:
        """The earlier result of an identical read-only call, with a note; a copy of a failure
        stays a failure."""
        tool = tools.get(call.name)
        if GUARD.of(config) == "off" or tool is None or not tool.read_only:
            return None
        wanted = signature(call.name, call.arguments)
        turns = {c.id: c.turn for c in asked_calls(state)}
        for run in state.tool_log:
            if run.name == call.name and signature(run.name, run.arguments) == wanted:
                earlier = result_text(state, run.call_id)
                if earlier is None:
                    continue
                text = earlier + REPEAT_NOTE.format(turn=turns.get(run.call_id, run.turn))
                error = None if run.ok else Repeated(run.error or "failed")
                outcome = ToolOutcome(
                    call, "" if error else text, False, cached=True, error=error, repeated=True
                )
                return outcome, text
        return None

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        guard = GUARD.of(config)
        if guard == "off" or not just_repeated(state):
            return
        if guard == "answer":
            plan.tools = []  # the model answers from what it has instead of asking again
        elif guard == "submit" and SUBMIT_ON.of(config):
            plan.require(named(SUBMIT))


HOOK = RepeatGuard()
