"""Figures only one environment's runs have, by environment: a run file's summary carries
each under its key (None when no task of the run ran there) and its Markdown adds a section.
A new family's figures are one module and one line here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evals.record import RunRecord
from evals.report import analyst


@dataclass(frozen=True)
class Figures:
    key: str  # the summary's key
    heading: str  # the Markdown section's heading
    of: Callable[[Sequence[RunRecord]], dict[str, Any] | None]
    markdown: Callable[[dict[str, Any]], str]


# By the name of the environment whose records they read.
FIGURES: dict[str, Figures] = {
    # The sql family's figures (steps, SQL errors and recoveries, timeouts, rows).
    "database": Figures("analyst", "What the chapter measures", analyst.figures, analyst.markdown),
}


def family_figures(records: Sequence[RunRecord]) -> dict[str, dict[str, Any] | None]:
    """Every family's figures over its own environment's records, by the summary's key."""
    return {
        f.key: f.of([r for r in records if r.environment.name == name])
        for name, f in FIGURES.items()
    }


def family_sections(summary: dict[str, Any]) -> list[str]:
    """The Markdown sections of the families a summary has figures of."""
    lines: list[str] = []
    for f in FIGURES.values():
        if summary.get(f.key):
            lines += [f"## {f.heading}", "", f.markdown(summary[f.key]), ""]
    return lines
