"""``nudges``: a reply with neither a call nor any text is met with a request to go on, at most
this many times a run."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Said, Setting
from harness.policies.submit import SUBMIT_ON
from harness.state import RunState, last_reply

NUDGE = (
    "Your last reply was empty. Call a tool to find out what you still need, or give your "
    "answer now."
)
NUDGE_SUBMIT = (
    "Your last reply was empty. Call a tool to find out what you still need, or call submit "
    "with your answer now."
)

NUDGES: Setting[int] = Setting(
    "nudges",
    0,
    "times an empty reply is met with 'go on'",
    "int",
    doc=(
        'a reply with neither a call nor any text gets "your last reply was empty, call a tool or '
        'answer", at most N times a run'
    ),
)


class Nudge(Hook):
    name = "nudges"
    settings = (NUDGES,)

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        """A reply cut at the length limit is left to the loop's own request to finish; a reply
        to the last call after a limit ends the run, empty or not."""
        last = last_reply(state)
        newest = last is not None and last[0] == len(state.messages) - 1
        if not newest or not state.turn_records or state.concluding is not None:
            return None
        message = state.messages[-1]
        if (
            message.get("tool_calls")
            or message.get("refusal")
            or (message.get("content") or "").strip()
        ):
            return None
        if state.turn_records[-1].finish_reason == "length":
            return None
        if len(state.asked(self.name)) >= NUDGES.of(config):
            return None
        return Said(NUDGE_SUBMIT if SUBMIT_ON.of(config) else NUDGE)


HOOK = Nudge()
