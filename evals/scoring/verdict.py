"""How a finished task run is judged, in one value: each check's result, the hash of the checks
that judged it, what its answer states that the workspace contradicts, and whether it is right,
by the one rule the runner, ``rescore`` and the strategies share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evals.scoring.claims import false_claims
from evals.scoring.evidence import score
from evals.tasks import Task
from harness.state import RunState


def passed(checks: Sequence[Mapping[str, Any]] | None) -> bool:
    """The rule for a right task run: it was judged by at least one check, and every check
    passed (a task with no checks, or a run never judged, is not right)."""
    return bool(checks) and all(c["passed"] for c in checks or ())


def right(checks: Sequence[Mapping[str, Any]] | None, status: str) -> bool:
    """Whether a recorded task run counts as right: its checks passed (:func:`passed`) and the
    machinery did not fail it (an ``error`` or ``not_run`` status says nothing of the model,
    whatever its checks say)."""
    return status not in ("error", "not_run") and passed(checks)


@dataclass(frozen=True)
class Verdict:
    checks: list[dict[str, Any]]  # each check's result, as a record keeps it
    checks_hash: str
    false_claims: list[str] | None  # None: the task's workspace is not known

    @property
    def correct(self) -> bool:
        return passed(self.checks)


def verdict_of(
    task: Task,
    state: RunState,
    verdicts: Mapping[str, float] | None = None,
    after: Mapping[str, str] | None = None,
) -> Verdict:
    """``task``'s checks on the finished run ``state`` (``verdicts``: what an environment's own
    judge gave it; ``after``: the results of its ``after`` checks' calls)."""
    return Verdict(
        checks=score(task, state, verdicts, after),
        checks_hash=task.checks_hash,
        false_claims=false_claims(task, state.answer),
    )
