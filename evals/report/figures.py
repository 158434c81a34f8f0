"""Figures only one environment's runs have, by environment: a run file's summary carries
each under its key (None when no task of the run ran there) and its Markdown adds a section.
An environment declares its own (``figures``, ``evals.environments.base.Figures``): the
database's are the analyst's (``evals.database.figures``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence, Set
from typing import Any

from evals import registry
from evals.environments.base import Figures
from evals.record import RunRecord
from harness.plugins import PluginWarning


def _figures(taken: Set[str] = frozenset()) -> dict[str, Figures]:
    """The figures each environment declares, by its name. One under a key the summary has
    (``taken``) or another's is left out, with a warning that names its environment."""
    found: dict[str, Figures] = {}
    keys = set(taken)
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
