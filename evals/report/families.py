"""Figures only one environment's runs have, by environment: a run file's summary carries
each under its key (None when no task of the run ran there) and its Markdown adds a section.
An environment declares its own (``figures``, ``evals.environments.base.Figures``); the
database environment's are the analyst's, which use the report's statistics and tables (a
layer above the environments), so they are named here, by that environment's name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.environments import registry
from evals.environments.base import Figures
from evals.record import RunRecord
from evals.report import analyst

# Figures that live in the report's layer, by the name of the environment whose records
# they read: the sql family's (steps, SQL errors and recoveries, timeouts, rows).
FIGURES: dict[str, Figures] = {
    "database": Figures("analyst", "What the chapter measures", analyst.figures, analyst.markdown),
}


def _figures() -> dict[str, Figures]:
    """Every environment's figures: the report's own, and those each environment declares."""
    declared = {
        e.name: found
        for e in registry.ENVIRONMENTS
        if isinstance(found := getattr(e, "figures", None), Figures)
    }
    return {**FIGURES, **declared}


def family_figures(records: Sequence[RunRecord]) -> dict[str, dict[str, Any] | None]:
    """Every family's figures over its own environment's records, by the summary's key."""
    return {
        f.key: f.of([r for r in records if r.environment.name == name])
        for name, f in _figures().items()
    }


def family_sections(summary: dict[str, Any]) -> list[str]:
    """The Markdown sections of the families a summary has figures of."""
    lines: list[str] = []
    for f in _figures().values():
        if summary.get(f.key):
            lines += [f"## {f.heading}", "", f.markdown(summary[f.key]), ""]
    return lines
