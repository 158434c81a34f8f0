"""What a record's status says about the model: the one definition of an error.

A task run the machinery ended (the provider unreachable, or 429/5xx after its retries,
``error``) or that never ran (``not_run``: the server was gone, the eval stopped first) says
nothing about the model. It is left out of every accuracy, interval and paired test, counted
apart, and run again by ``--resume``. What the model did (the turn cap reached, refused calls,
an empty answer) stays a wrong answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.run.record import RunRecord

NOT_RUN = "not_run"
ERROR = "error"


def is_error(record: RunRecord) -> bool:
    """A task run that says nothing about the model."""
    return record.status in (ERROR, NOT_RUN)
