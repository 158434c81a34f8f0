"""``read_before_answer``: an answer given before any file was read is met, once, with a request
to read the file it depends on (with the user's question); the reply to it must call a tool."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Said, Setting, TurnPlan
from harness.policies.reads import answered_before_success, question
from harness.state import RunState
from harness.tools import READ_TOOL

READ_FIRST = (
    "You have not read any file yet. Read the file your answer depends on with read_file. Then "
    "answer the question from the tool results: {question}"
)

READ_BEFORE_ANSWER: Setting[bool] = Setting(
    "read_before_answer",
    False,
    "an answer given before any file was read is met, once, with a request to read the file "
    "it depends on; the next reply must call a tool",
    "bool",
    doc=(
        'an answer given before any read succeeded is met, once, with "You have not read any file '
        "yet. Read the file your answer depends on with read_file. Then answer the question from "
        "the tool results: \" and the user's own question; the reply to it must call a tool. Asked "
        "only where `read_file` is offered, never twice in a run (a resumed run knows it from its "
        "`asks`)"
    ),
)


class ReadFirst(Hook):
    name = "read_before_answer"
    settings = (READ_BEFORE_ANSWER,)

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        """Only when read_file is offered; a read counts when it succeeded."""
        if not READ_BEFORE_ANSWER.of(config):
            return None
        if not answered_before_success(state, READ_TOOL, offered, self.name):
            return None
        return Said(READ_FIRST.format(question=question(state)))

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if READ_BEFORE_ANSWER.of(config) and state.just_asked(self.name):
            plan.require("required")


HOOK = ReadFirst()
