"""How sure an accuracy is, and whether two runs differ: every formula is a library's.

The task is the unit. Epochs of one task are one observation: a task counts as its share of
right epochs, so ten identical greedy epochs weigh what one does.

* :func:`wilson`: a 95 % Wilson score interval on k right out of n
  (in closed form, equal to ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``).
* :func:`accuracy`: a run's accuracy over its tasks: Wilson's interval over the tasks where
  every task's epochs agree, else a t interval on the per-task means (the standard error
  clustered by task; ``statsmodels`` ``DescrStatsW.tconfint_mean``).
* two runs over the same tasks, pair by pair: :mod:`evals.report.pairing`.
* :func:`detectable_difference` and :func:`tasks_needed`: power at 80 % and 5 % two-sided
  significance (``statsmodels`` ``NormalIndPower`` on Cohen's h), treating the runs as
  independent samples of the tasks, so the figure is conservative for a paired comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.record import RunRecord, is_error

# numpy, scipy and statsmodels are imported where a figure is computed, so the commands that
# only declare their flags (``python -m evals --help``) start without them.
# The normal quantile of a two-sided 95 % interval.
_Z = 1.959963984540054

CONFIDENCE = 0.95
RESAMPLES = 9999
RANDOM_STATE = 0  # the same two runs always get the same interval
POWER = 0.8


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
    # Wilson's score interval in closed form, as scipy's binomtest(k, n).proportion_ci(
    # method="wilson") computes it (Newcombe 1998; the same operations, so the same floats:
    # a test holds them equal), without loading scipy.
    p, q = k / n, 1 - k / n
    denom = 2 * (n + _Z**2)
    center = (2 * n * p + _Z**2) / denom
    delta = _Z / denom * math.sqrt(4 * n * p * q + _Z**2)
    low = 0.0 if k == 0 else center - delta
    high = 1.0 if k == n else center + delta
    return Proportion(k, n, low, high)


def by_task(records: Sequence[RunRecord]) -> dict[str, list[bool]]:
    """Each task's outcomes, one per epoch, in the records' order; a task run the machinery
    ended, or that never ran, is no outcome."""
    outcomes: dict[str, list[bool]] = {}
    for r in records:
        if not is_error(r):
            outcomes.setdefault(r.task_id, []).append(r.correct)
    return outcomes


@dataclass(frozen=True)
class Accuracy:
    """An accuracy with the task as the unit: each task counts once, as the share of its epochs
    it got right. Where every task's epochs agree (greedy epochs repeat one transcript), the
    interval is Wilson's over the tasks; otherwise a t interval on the per-task means, which is
    the standard error clustered by task."""

    tasks: int
    epochs: int
    rate: float
    low: float
    high: float
    right: int | None  # tasks right, when every task's epochs agree

    @property
    def k(self) -> float:
        """Tasks right: a whole number where epochs agree, else the sum of the shares."""
        return self.right if self.right is not None else round(self.rate * self.tasks, 2)

    @property
    def n(self) -> int:
        return self.tasks

    def interval(self) -> str:
        return f"{100 * self.rate:.0f} % [{100 * self.low:.0f}, {100 * self.high:.0f}]"

    def __str__(self) -> str:
        if self.right is not None:
            text = str(Proportion(self.right, self.tasks, self.low, self.high))
            if self.epochs > 1:
                text += f" ({self.epochs} identical epochs count once)"
            return text
        return (
            f"{100 * self.rate:.0f} % of {self.tasks} tasks x {self.epochs} epochs "
            f"(95 % CI {100 * self.low:.0f}–{100 * self.high:.0f} %, clustered by task)"
        )


def pass_hat_k(records: Sequence[RunRecord], k: int) -> float | None:
    """pass^k as τ-bench defines it: over tasks, the mean of C(c, k) / C(n, k) for a task right
    in c of its n epochs, the chance that k epochs drawn from its n are all right. None when
    a task has fewer than k epochs (or there is no task)."""
    import numpy as np
    from scipy.special import comb

    outcomes = by_task(records)
    if not outcomes or k < 1 or any(len(v) < k for v in outcomes.values()):
        return None
    shares = [comb(sum(v), k) / comb(len(v), k) for v in outcomes.values()]
    return float(np.mean(shares))


def pass_hat_interval(
    records: Sequence[RunRecord], k: int, draws: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """A 95 % interval of pass^k: the tasks drawn again with replacement (the task is the
    unit), pass^k of each draw, its 2.5th and 97.5th percentiles. Where every task's pass^k is
    0 or 1 (each task right in all its epochs or in fewer than k), a redraw can only repeat
    the tasks' outcomes: all wrong would give [0, 0], certain on any number of tasks. There
    it is Wilson's interval over the tasks, as the accuracy's is (:func:`accuracy`). None
    where pass^k is."""
    import numpy as np
    from scipy.special import comb

    outcomes = by_task(records)
    if not outcomes or k < 1 or any(len(v) < k for v in outcomes.values()):
        return None
    shares = np.array([comb(sum(v), k) / comb(len(v), k) for v in outcomes.values()])
    if all(share in (0.0, 1.0) for share in shares):
        p = wilson(int(shares.sum()), len(shares))
        return p.low, p.high
    picks = np.random.default_rng(seed).integers(0, len(shares), size=(draws, len(shares)))
    means = shares[picks].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def pass_hat_curve(records: Sequence[RunRecord]) -> dict[str, float]:
    """pass^k for every k from 1 to the fewest epochs any task has, keyed by k."""
    outcomes = by_task(records)
    fewest = min((len(v) for v in outcomes.values()), default=0)
    found = {str(k): pass_hat_k(records, k) for k in range(1, fewest + 1)}
    return {k: round(v, 4) for k, v in found.items() if v is not None}


def accuracy_of(summary: dict[str, Any]) -> Accuracy:
    """A run summary's accuracy over its tasks (a summary written before tasks were the unit:
    Wilson's over its task runs)."""
    if "task_accuracy" in summary:
        return Accuracy(**summary["task_accuracy"])
    p = wilson(summary["correct"], summary["runs"])
    return Accuracy(summary["runs"], 1, p.rate, p.low, p.high, summary["correct"])


def accuracy(records: Sequence[RunRecord]) -> Accuracy:
    import numpy as np
    from statsmodels.stats.weightstats import DescrStatsW

    outcomes = by_task(records)
    epochs = max((len(v) for v in outcomes.values()), default=0)
    if all(len(set(v)) == 1 for v in outcomes.values()):
        right = sum(v[0] for v in outcomes.values())
        p = wilson(right, len(outcomes))
        return Accuracy(len(outcomes), epochs, p.rate, p.low, p.high, right)
    means = np.array([np.mean(v) for v in outcomes.values()])
    low, high = DescrStatsW(means).tconfint_mean(alpha=1 - CONFIDENCE)
    rate = float(means.mean())
    return Accuracy(len(outcomes), epochs, rate, max(0.0, float(low)), min(1.0, float(high)), None)


def detectable_difference(
    tasks: int, baseline: float | None = None, power: float = POWER
) -> float | None:
    """The smallest difference ``tasks`` tasks detect with ``power`` at 5 % two-sided
    significance, in points, treating the two runs as independent samples of the tasks
    (pairing can only lower it). Without ``baseline``: two rates either side of 50 %, the worst
    case; with it, a rise over that rate (None when no rise within 100 % is detectable)."""
    from statsmodels.stats.power import NormalIndPower

    if tasks < 2:
        return None
    h = float(
        NormalIndPower().solve_power(nobs1=tasks, alpha=1 - CONFIDENCE, power=power, ratio=1.0)
    )
    if baseline is None:
        # Rates 50 % -/+ d/2 are h apart in Cohen's arcsine scale when d = sin(h / 2).
        return 100 * math.sin(h / 2) if h <= math.pi else None
    angle = math.asin(math.sqrt(min(max(baseline, 0.0), 1.0))) + h / 2
    if angle > math.pi / 2:
        return None
    return 100 * (math.sin(angle) ** 2 - baseline)


def tasks_needed(difference: float, baseline: float = 0.5, power: float = POWER) -> int | None:
    """How many tasks a rise of ``difference`` points over ``baseline`` needs to be detected
    with ``power`` at 5 % two-sided significance (independent samples, as above)."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    target = baseline + difference / 100
    if difference <= 0 or target > 1:
        return None
    h = abs(proportion_effectsize(target, baseline))
    n = NormalIndPower().solve_power(effect_size=h, alpha=1 - CONFIDENCE, power=power, ratio=1.0)
    return math.ceil(float(n))
