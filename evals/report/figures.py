"""Figures only one environment's runs have, by environment: a run file's summary carries
each under its key (None when no task of the run ran there) and its Markdown adds a section.
An environment declares its own (``figures``, ``evals.environments.base.Figures``); the
database environment's are the analyst's, which use the report's statistics and tables (a
layer above the environments), so they are named here, by that environment's name."""

from __future__ import annotations

import warnings
from collections.abc import Sequence, Set
from typing import Any

from evals.environments import registry
from evals.environments.base import Figures
from evals.record import RunRecord
from evals.report import analyst
from harness.plugins import PluginWarning

# Figures that live in the report's layer, by the name of the environment whose records
# they read: the SQL analyst's (steps, SQL errors and recoveries, timeouts, rows).
FIGURES: dict[str, Figures] = {
    "database": Figures("analyst", "What the chapter measures", analyst.figures, analyst.markdown),
}


def _figures(taken: Set[str] = frozenset()) -> dict[str, Figures]:
    """Every environment's figures: the report's own, and those each environment declares. A
    declared one under a key the summary has (``taken``) or another's is left out, with a
    warning that names its environment."""
    found = dict(FIGURES)
    keys = set(taken) | {f.key for f in FIGURES.values()}
    for environment in registry.ENVIRONMENTS:
        figures = getattr(environment, "figures", None)
        if not isinstance(figures, Figures) or environment.name in found:
            continue
        if figures.key in keys:
            warnings.warn(
                f"the {environment.name} environment's figures are left out: the summary's "
                f"key {figures.key!r} is taken",
                PluginWarning,
                stacklevel=2,
            )
            continue
        found[environment.name] = figures
        keys.add(figures.key)
    return found


def environment_figures(
    records: Sequence[RunRecord], taken: Set[str] = frozenset()
) -> dict[str, dict[str, Any] | None]:
    """Every environment's figures over its own records, by the summary's key; none
    under a key in ``taken`` (the summary's own)."""
    return {
        f.key: f.of([r for r in records if r.environment.name == name])
        for name, f in _figures(taken).items()
    }


def environment_sections(summary: dict[str, Any], taken: Set[str] = frozenset()) -> list[str]:
    """The Markdown sections of the environments a summary has figures of (none under a key in
    ``taken``, the summary's own)."""
    lines: list[str] = []
    for f in _figures(taken).values():
        if summary.get(f.key):
            lines += [f"## {f.heading}", "", f.markdown(summary[f.key]), ""]
    return lines
