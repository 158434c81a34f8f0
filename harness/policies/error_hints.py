"""``error_hints``: whether a failed call's hint (what the tool knows would help: the columns
that do exist, the tables there are) follows the error's own message.

``hinted`` is the loop-control chapter's "an error that says what to do"; ``plain`` gives the
tool's (the database's) message only, so what a hint is worth can be measured. Tools without
hints read the same under both."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting

ERROR_HINTS: Setting[str] = Setting(
    "error_hints",
    "hinted",
    "a failed call's hint (what exists instead) follows its error message, or not (plain)",
    "choice",
    choices=("hinted", "plain"),
    doc=(
        "a failed call's hint (what the tool knows would help: for an unknown SQL column the "
        "closest columns and the columns of the tables named, for an unknown table the tables there"
        " are) follows the error's message, or not; the file tools give none"
    ),
)


def shows_hints(config: Config) -> bool:
    return ERROR_HINTS.of(config) == "hinted"


class ErrorHints(Hook):
    name = "error_hints"
    settings = (ERROR_HINTS,)


HOOK = ErrorHints()
