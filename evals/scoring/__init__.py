"""Where a run is judged: the checks of a task applied to a finished run (``checks``), and the
same checks applied again to runs recorded earlier (``rescore``)."""

from evals.scoring.claims import false_claims
from evals.scoring.evidence import check_passes, describe, files_read, received, score, stated

__all__ = [
    "check_passes",
    "describe",
    "false_claims",
    "files_read",
    "received",
    "score",
    "stated",
]
