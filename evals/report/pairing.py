"""Two runs over the same tasks, one pair per task: is one better?

* :func:`paired`: the verdict is an exact two-sided sign test on the tasks where the runs
  differ (McNemar's exact test where each task's outcome is right or wrong); a paired bootstrap
  over tasks (percentile method, fixed random state) gives the interval and never overrides
  the test. Every "no difference detected" states the smallest rise the set could have
  detected (:func:`evals.stats.detectable_difference`). Runs over different task sets
  are refused, never compared.
* :func:`paired_outcomes`: the same over outcomes already paired by key (BFCL's items).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.errors import EvalError
from evals.record import RunRecord
from evals.stats import (
    CONFIDENCE,
    POWER,
    RANDOM_STATE,
    RESAMPLES,
    by_task,
    detectable_difference,
)


class PairingError(EvalError):
    """Two runs that cannot be compared pair by pair; the message names the difference."""


@dataclass(frozen=True)
class Paired:
    """Run B against run A over the tasks both ran, each task counted once (its share of right
    epochs in each run)."""

    label_a: str
    label_b: str
    tasks: int
    correct_a: float  # tasks right in A (fractional where sampled epochs disagree)
    correct_b: float
    only_a: list[str] = field(default_factory=list)  # tasks A did better on
    only_b: list[str] = field(default_factory=list)  # tasks B did better on
    difference: float = 0.0  # accuracy of B minus A, in points
    low: float = 0.0  # its 95 % paired bootstrap interval over tasks, in points
    high: float = 0.0
    p_value: float = 1.0  # exact sign test over tasks (McNemar's where outcomes are 0 or 1)
    # The smallest difference these tasks detect at 80 % power, in points, at the worst case
    # (rates near 50 %): what a "no difference detected" could have seen.
    detectable: float | None = None
    # The same above the lower run's accuracy, where that is far enough from 50 % to differ:
    # near 0 % or 100 % a set detects far smaller differences than near 50 %.
    detectable_above_lower: float | None = None

    @property
    def detected(self) -> bool:
        """The exact test says one run is better; the bootstrap interval never decides."""
        return self.p_value < 1 - CONFIDENCE

    def sentence(self) -> str:
        interval = f"95 % CI [{_points(self.low)}, {_points(self.high)}]"
        p = f"exact test p = {self.p_value:.2g}"
        if self.detected and self.difference > 0:
            return f"{self.label_b} is better by {_points(self.difference)} points, {interval}, {p}"
        if self.detected:
            flipped = f"95 % CI [{_points(-self.high)}, {_points(-self.low)}]"
            return f"{self.label_a} is better by {_points(-self.difference)} points, {flipped}, {p}"
        power = (
            f"; at {100 * POWER:.0f} % power {self.tasks} tasks detect a difference of "
            f"{_points(self.detectable)} points or more near 50 %"
            if self.detectable is not None
            else f"; {self.tasks} tasks cannot detect any difference at {100 * POWER:.0f} % power"
        )
        if self.detectable_above_lower is not None:
            lower = 100 * min(self.correct_a, self.correct_b) / self.tasks
            rise = _points(self.detectable_above_lower)
            power += (
                f", a rise of {rise} point{'' if rise == '1' else 's'} or more above the lower "
                f"run's {lower:.0f} %"
            )
        return (
            f"no difference detected ({self.label_b} minus {self.label_a}: "
            f"{_points(self.difference, signed=True)} points, {interval}, {p}{power})"
        )


def _points(value: float, signed: bool = False) -> str:
    """Whole points; a value that rounds to zero is 0, never -0."""
    whole = round(value)
    return f"{whole:+d}" if signed and whole else str(whole)


def unshared(ids_a: set[str], ids_b: set[str], label_a: str, label_b: str, verb: str) -> str:
    """What each of two runs has that the other has not, in words: "only A has x; only B has
    y"."""
    parts = []
    if ids_a - ids_b:
        parts.append(f"only {label_a} {verb} {', '.join(sorted(ids_a - ids_b))}")
    if ids_b - ids_a:
        parts.append(f"only {label_b} {verb} {', '.join(sorted(ids_b - ids_a))}")
    return "; ".join(parts)


SURFACE_SUFFIX = re.compile(r"-mcp-[A-Za-z0-9_]+$")


def _check_same_tasks(
    a: Sequence[RunRecord],
    b: Sequence[RunRecord],
    label_a: str,
    label_b: str,
    across_surfaces: bool = False,
) -> None:
    """``across_surfaces``: the runs asked the same questions over different tool surfaces
    (``evals surface``: one task set's ``-mcp-SURFACE`` variants), so their task sets are named
    alike but for that suffix and their tasks were asked with other tools; their checks must
    still be the same."""

    def base(name: object) -> str:
        return SURFACE_SUFFIX.sub("", str(name)) if across_surfaces else str(name)

    sets_a = {base(r.spec.task_set) for r in a}
    sets_b = {base(r.spec.task_set) for r in b}
    if sets_a != sets_b:
        raise PairingError(
            f"the runs are over different task sets: {label_a} ran "
            f"{', '.join(sorted(map(str, sets_a)))}, {label_b} ran "
            f"{', '.join(sorted(map(str, sets_b)))}"
        )
    ids_a = {r.task_id for r in a}
    ids_b = {r.task_id for r in b}
    if ids_a != ids_b:
        only = unshared(ids_a, ids_b, label_a, label_b, "has")
        raise PairingError(f"the runs have different task ids: {only}")
    for key, what, remedy in (
        ("task_hash", "was asked differently (question, workspace or tools)", "pair runs of one "
         "task file"),
        ("checks_hash", "was judged by other checks", "rescore both runs first"),
    )[across_surfaces:]:  # fmt: skip
        seen_a = {r.task_id: getattr(r, key) for r in a if getattr(r, key)}
        seen_b = {r.task_id: getattr(r, key) for r in b if getattr(r, key)}
        differ = sorted(t for t in seen_a.keys() & seen_b.keys() if seen_a[t] != seen_b[t])
        if differ:
            first = differ[0]
            raise PairingError(
                f"task {first} {what} in the two runs ({key} {seen_a[first]} in {label_a}, "
                f"{seen_b[first]} in {label_b}"
                + (f"; {len(differ) - 1} more tasks differ" if len(differ) > 1 else "")
                + f"): {remedy}"
            )


def _mean_difference(a: Any, b: Any, axis: int = -1) -> Any:
    import numpy as np

    return np.mean(b - a, axis=axis)


def paired(
    a: Sequence[RunRecord],
    b: Sequence[RunRecord],
    label_a: str = "A",
    label_b: str = "B",
    across_surfaces: bool = False,
) -> Paired:
    """B against A over the tasks both ran; different task sets are refused (but for their
    tool surfaces, with ``across_surfaces``). Each task is one pair (its share of right epochs
    in each run), the verdict is an exact sign test on the tasks where the runs differ, and the
    interval a bootstrap over tasks."""
    _check_same_tasks(a, b, label_a, label_b, across_surfaces)
    return paired_outcomes(by_task(a), by_task(b), label_a, label_b)


def paired_outcomes(
    got_a: dict[str, list[bool]],
    got_b: dict[str, list[bool]],
    label_a: str = "A",
    label_b: str = "B",
) -> Paired:
    """B against A from each task's outcomes (one per epoch) in each run, over the tasks both
    have; the caller has made sure the two runs asked the same tasks. A BFCL item or
    conversation is a task here."""
    import numpy as np
    from scipy.stats import binomtest, bootstrap

    keys = [k for k in got_a if k in got_b]  # in A's order; a task with only errors is left out
    if not keys:
        raise PairingError(f"{label_a} and {label_b} share no task with an outcome")
    xs = np.array([np.mean(got_a[k]) for k in keys], dtype=float)
    ys = np.array([np.mean(got_b[k]) for k in keys], dtype=float)
    only_a = [k for k, x, y in zip(keys, xs, ys, strict=True) if x > y]
    only_b = [k for k, x, y in zip(keys, xs, ys, strict=True) if y > x]
    differences = ys - xs
    difference = float(_mean_difference(xs, ys))
    if np.all(differences == differences[0]):
        # Every pair differs by the same amount: each resample gives it back, and scipy would
        # warn of degenerate data. The interval is that one value.
        low = high = difference
    else:
        result = bootstrap(
            (xs, ys),
            _mean_difference,
            paired=True,
            vectorized=True,
            n_resamples=RESAMPLES,
            confidence_level=CONFIDENCE,
            method="percentile",
            random_state=RANDOM_STATE,
        )
        low = float(result.confidence_interval.low)
        high = float(result.confidence_interval.high)
    discordant = len(only_a) + len(only_b)
    p_value = float(binomtest(len(only_a), discordant, 0.5).pvalue) if discordant else 1.0
    near_half = detectable_difference(len(keys))
    return Paired(
        label_a=label_a,
        label_b=label_b,
        tasks=len(keys),
        correct_a=float(xs.sum()),
        correct_b=float(ys.sum()),
        only_a=only_a,
        only_b=only_b,
        difference=100 * difference,
        low=100 * low,
        high=100 * high,
        p_value=min(1.0, p_value),
        detectable=near_half,
        detectable_above_lower=_above_lower(len(keys), min(xs.mean(), ys.mean()), near_half),
    )


def _above_lower(tasks: int, lower: float, near_half: float | None) -> float | None:
    """The detectable rise above ``lower``, where it says more than ``near_half`` (the figure
    near 50 %): that rate is outside 30-70 % and the two figures differ by two points or more."""
    above = detectable_difference(tasks, float(lower))
    if near_half is None or above is None or 0.3 <= lower <= 0.7:
        return None
    return above if near_half - above >= 2 else None
