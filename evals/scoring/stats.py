"""How sure an accuracy is, and whether two runs differ: every formula is scipy's.

* :func:`wilson`: a 95 % Wilson score interval on k correct out of n task runs
  (``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``). Epochs of one task are
  counted as separate runs, so with several epochs the interval is narrower than the tasks
  alone would justify; greedy epochs repeat one transcript and add nothing.
* :func:`paired`: two runs over the same task runs (task id and epoch): the difference in
  accuracy with a paired bootstrap interval (percentile method, fixed random state) and an
  exact McNemar test on the discordant pairs (a two-sided binomial test of b against b + c).
  Runs over different task sets are refused, never compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binomtest, bootstrap

CONFIDENCE = 0.95
RESAMPLES = 9999
RANDOM_STATE = 0  # the same two runs always get the same interval


class PairingError(ValueError):
    """Two runs that cannot be compared pair by pair; the message names the difference."""


@dataclass(frozen=True)
class Proportion:
    """k correct out of n, with its 95 % Wilson interval (as fractions)."""

    k: int
    n: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else 0.0

    def interval(self) -> str:
        """``33 % [10, 70]``: the rate and its interval, in percent."""
        return f"{100 * self.rate:.0f} % [{100 * self.low:.0f}, {100 * self.high:.0f}]"

    def __str__(self) -> str:
        if not self.n:
            return "0/0"
        return (
            f"{self.k}/{self.n} = {100 * self.rate:.0f} % "
            f"(95 % CI {100 * self.low:.0f}–{100 * self.high:.0f} %)"
        )


def wilson(k: int, n: int) -> Proportion:
    """k of n with its 95 % Wilson score interval; no runs at all say nothing: [0, 1]."""
    if n == 0:
        return Proportion(0, 0, 0.0, 1.0)
    ci = binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return Proportion(k, n, float(ci.low), float(ci.high))


Key = tuple[str, int]  # (task id, epoch)


@dataclass(frozen=True)
class Paired:
    """Run B against run A over the task runs both made."""

    label_a: str
    label_b: str
    pairs: int
    correct_a: int
    correct_b: int
    only_a: list[Key] = field(default_factory=list)  # right in A, wrong in B (McNemar's b)
    only_b: list[Key] = field(default_factory=list)  # right in B, wrong in A (McNemar's c)
    difference: float = 0.0  # accuracy of B minus A, in points
    low: float = 0.0  # its 95 % paired bootstrap interval, in points
    high: float = 0.0
    p_value: float = 1.0  # exact McNemar, two-sided

    @property
    def detected(self) -> bool:
        """The interval leaves out 0: one run is better on these tasks."""
        return self.low > 0 or self.high < 0

    def sentence(self) -> str:
        p = f"McNemar p = {self.p_value:.2g}"
        if self.detected and self.p_value >= 1 - CONFIDENCE:
            # The percentile bootstrap runs narrow on few pairs; the exact test says so.
            p += (
                f" (the exact test does not confirm it: {len(self.only_a) + len(self.only_b)} "
                "discordant task runs are too few)"
            )
        if self.low > 0:
            return (
                f"{self.label_b} is better by {_points(self.difference)} points, 95 % CI "
                f"[{_points(self.low)}, {_points(self.high)}], {p}"
            )
        if self.high < 0:
            return (
                f"{self.label_a} is better by {_points(-self.difference)} points, 95 % CI "
                f"[{_points(-self.high)}, {_points(-self.low)}], {p}"
            )
        return (
            f"no difference detected ({self.label_b} minus {self.label_a}: "
            f"{_points(self.difference, signed=True)} points, 95 % CI "
            f"[{_points(self.low)}, {_points(self.high)}], {p})"
        )


def _points(value: float, signed: bool = False) -> str:
    """Whole points; a value that rounds to zero is 0, never -0."""
    whole = round(value)
    return f"{whole:+d}" if signed and whole else str(whole)


def _outcomes(records: Sequence[dict[str, Any]]) -> dict[Key, bool]:
    return {(str(r["task_id"]), int(r["epoch"])): bool(r["correct"]) for r in records}


def _check_same_tasks(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], label_a: str, label_b: str
) -> None:
    sets_a = {r.get("task_set") for r in a}
    sets_b = {r.get("task_set") for r in b}
    if sets_a != sets_b:
        raise PairingError(
            f"the runs are over different task sets: {label_a} ran "
            f"{', '.join(sorted(map(str, sets_a)))}, {label_b} ran "
            f"{', '.join(sorted(map(str, sets_b)))}"
        )
    ids_a = {str(r["task_id"]) for r in a}
    ids_b = {str(r["task_id"]) for r in b}
    if ids_a != ids_b:
        parts = []
        if ids_a - ids_b:
            parts.append(f"only {label_a} has {', '.join(sorted(ids_a - ids_b))}")
        if ids_b - ids_a:
            parts.append(f"only {label_b} has {', '.join(sorted(ids_b - ids_a))}")
        raise PairingError(f"the runs have different task ids: {'; '.join(parts)}")


def _mean_difference(a: Any, b: Any, axis: int = -1) -> Any:
    return np.mean(b - a, axis=axis)


def paired(
    a: Sequence[dict[str, Any]],
    b: Sequence[dict[str, Any]],
    label_a: str = "A",
    label_b: str = "B",
) -> Paired:
    """B against A over the (task id, epoch) pairs both ran; different task sets are refused."""
    _check_same_tasks(a, b, label_a, label_b)
    got_a, got_b = _outcomes(a), _outcomes(b)
    keys = [k for k in got_a if k in got_b]  # in A's order
    if not keys:
        raise PairingError(f"{label_a} and {label_b} share no task run (task id and epoch)")
    xs = np.array([got_a[k] for k in keys], dtype=float)
    ys = np.array([got_b[k] for k in keys], dtype=float)
    only_a = [k for k in keys if got_a[k] and not got_b[k]]
    only_b = [k for k in keys if got_b[k] and not got_a[k]]
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
    return Paired(
        label_a=label_a,
        label_b=label_b,
        pairs=len(keys),
        correct_a=int(xs.sum()),
        correct_b=int(ys.sum()),
        only_a=only_a,
        only_b=only_b,
        difference=100 * difference,
        low=100 * low,
        high=100 * high,
        p_value=min(1.0, p_value),
    )
