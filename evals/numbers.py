"""The two figures of a list of turn latencies every record and summary states."""

from __future__ import annotations

import statistics


def p95(values: list[float]) -> float | None:
    """The 95th percentile (nearest rank), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None
