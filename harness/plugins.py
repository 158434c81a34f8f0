"""Plugins: what other installed packages add to a registry, found through Python entry points
(``importlib.metadata``), the way ``llm`` and Inspect find theirs. A package declares, in its
``pyproject.toml``:

    [project.entry-points."loopbench.settings"]
    shout = "loopbench_clock:SHOUT"

and the registry of that group (``loopbench.environments``, ``loopbench.settings``,
``loopbench.presets``, ``loopbench.backends``) lists the object after this project's own. A
plugin that fails to load, or that the registry refuses, is named in a :class:`PluginWarning`
and left out; the rest works (``loopbench plugins`` lists them all).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any


class PluginWarning(UserWarning):
    """A plugin left out: which one, from which package, and why."""


@cache
def declared(group: str) -> tuple[EntryPoint, ...]:
    """The entry points installed packages declare under ``group``, by name."""
    return tuple(sorted(entry_points(group=group), key=lambda e: e.name))


def where(entry: EntryPoint) -> str:
    package = entry.dist.name if entry.dist is not None else "an unknown package"
    return f"plugin {entry.name!r} ({entry.value}, from {package})"


def left_out(group: str, entry: EntryPoint, why: str) -> None:
    warnings.warn(f"{group}: {where(entry)} left out: {why}", PluginWarning, stacklevel=3)


# The distribution each loaded object came from, by group and the object's id.
_FROM: dict[tuple[str, int], str] = {}


@dataclass(frozen=True)
class Outcome:
    """One entry point of a group as its registry met it: what it names, from which
    distribution, and why it was left out (None: loaded)."""

    group: str
    name: str
    value: str
    package: str | None
    refused: str | None


# Every entry point each group's registry has met, in order (``loopbench plugins``).
_MET: dict[str, list[Outcome]] = {}


def outcomes(group: str) -> list[Outcome]:
    """What the registry of ``group`` made of each entry point, once it has loaded them."""
    return list(_MET.get(group, ()))


def loaded_from(group: str, thing: object) -> str | None:
    """The distribution that declared ``thing`` under ``group``; None for the project's own."""
    return _FROM.get((group, id(thing)))


def loaded(group: str, check: Callable[[Any], Any] = lambda x: x) -> list[Any]:
    """Each object declared under ``group``, loaded and passed through ``check`` (which returns
    what the registry keeps, or raises to refuse it); one that fails is left out, with a
    warning naming it."""
    found, met = [], []
    for entry in declared(group):
        package = entry.dist.name if entry.dist is not None else None
        try:
            kept = check(entry.load())
            found.append(kept)
            if package is not None:
                _FROM[(group, id(kept))] = package
            met.append(Outcome(group, entry.name, entry.value, package, None))
        except (Exception, SystemExit) as exc:  # a plugin's failure (an exit too) is its own
            why = f"{type(exc).__name__}: {exc}"
            left_out(group, entry, why)
            met.append(Outcome(group, entry.name, entry.value, package, why))
    _MET[group] = met
    return found
