"""Where a run is judged: the checks of a task applied to a finished run (``checks``)."""

from evals.scoring.checks import check_passes, describe, files_read, score

__all__ = ["check_passes", "describe", "files_read", "score"]
