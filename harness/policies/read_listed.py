"""``read_listed``: an answer given while files list_files showed are still unread is met with a
request to read those the answer depends on (with the user's question, naming no file and no
count); the reply to it must call a tool. Never twice for the same unread files, and at most
:data:`ASKS` times a run."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Said, Setting, TurnPlan
from harness.policies.reads import answered_last, listed_files, question, read_files
from harness.state import RunState
from harness.tools import READ_TOOL

# It names no file and no number: a name or a count here would be an answer the model could
# copy (the last unread file, the number of files) without having read anything.
READ_LISTED = (
    "Some files list_files showed are still unread. If your answer depends on any of them, "
    "read it with read_file, one call per file. Then answer the question from the tool "
    "results: {question}"
)
ASKS = 3

READ_LISTED_ON: Setting[bool] = Setting(
    "read_listed",
    False,
    "an answer given while files list_files showed are unread is met with a request to read "
    "those it depends on (naming none); the next reply must call a tool",
    "bool",
    doc=(
        "an answer given while files that `list_files` showed are unread (no successful `read_file`"
        ' of them) is met with "Some files list_files showed are still unread. If your answer '
        "depends on any of them, read it with read_file, one call per file. Then answer the "
        "question from the tool results: \" and the user's own question; the reply to it must "
        "call a tool. It names no file and no number: a first form that named the unread files "
        "was copied into answers (see below). Never asked twice while the same files are unread "
        "(kept with each request in the run's `asks`), at most three times a run, only where "
        "`read_file` is offered"
    ),
)


class ReadListed(Hook):
    name = "read_listed"
    settings = (READ_LISTED_ON,)

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        """Only when read_file is offered. The unread files at each request are kept with it
        (the run's ``asks``), so a resumed run counts them."""
        if not READ_LISTED_ON.of(config) or state.concluding is not None:
            return None
        if READ_TOOL not in offered or not answered_last(state):
            return None
        done = read_files(state)
        unread = [name for name in listed_files(state) if name not in done]
        if not unread:
            return None
        asked = [(a.data or {}).get("unread") for a in state.asked(self.name)]
        if len(asked) >= ASKS or unread in asked:
            return None
        return Said(READ_LISTED.format(question=question(state)), {"unread": unread})

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if READ_LISTED_ON.of(config) and state.just_asked(self.name):
            plan.require("required")


HOOK = ReadListed()
