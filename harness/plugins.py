"""Plugins: what other installed packages add to a registry, found through Python entry points
(``importlib.metadata``), the way ``llm`` and Inspect find theirs. A package declares, in its
``pyproject.toml``:

    [project.entry-points."loopbench.settings"]
    shout = "loopbench_clock:SHOUT"

and the registry of that group (``loopbench.environments``, ``loopbench.settings``,
``loopbench.backends``) lists the object after this project's own. A plugin that fails to load,
or that the registry refuses, is named in a :class:`PluginWarning` and left out; the rest works.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
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


def loaded_from(group: str, thing: object) -> str | None:
    """The distribution that declared ``thing`` under ``group``; None for the project's own."""
    return _FROM.get((group, id(thing)))


def loaded(group: str, check: Callable[[Any], Any] = lambda x: x) -> list[Any]:
    """Each object declared under ``group``, loaded and passed through ``check`` (which returns
    what the registry keeps, or raises to refuse it); one that fails is left out, with a
    warning naming it."""
    found = []
    for entry in declared(group):
        try:
            kept = check(entry.load())
            found.append(kept)
            if entry.dist is not None:
                _FROM[(group, id(kept))] = entry.dist.name
        except (Exception, SystemExit) as exc:  # a plugin's failure (an exit too) is its own
            left_out(group, entry, f"{type(exc).__name__}: {exc}")
    return found
