"""``plugins``: what other installed packages add through entry points (environments, loop
settings, presets, backends), each from its distribution, and each one left out with the reason."""

from __future__ import annotations

import argparse
from typing import Any

from evals import registry as environments
from harness import presets
from harness.plugins import Outcome, declared, outcomes
from harness.policies import registry as settings
from serve_local.backends import registry as backends


def register(commands: Any) -> None:
    listed = commands.add_parser(
        "plugins",
        help="what other packages add (environments, loop settings, presets, backends): from which "
        "distribution, and what was left out and why",
    )
    listed.set_defaults(handler=_plugins)


def _backends() -> list[Outcome]:
    """Each plugin backend: loaded (its module imported, its options read), or left out with
    the reason its registry gave."""
    loaded = backends.declared()
    found = []
    for entry in declared(backends.GROUP):
        package = entry.dist.name if entry.dist is not None else None
        why = backends.LEFT_OUT.get((entry.name, entry.value))
        if why is None and entry.name not in loaded:
            why = "not loaded"
        found.append(Outcome(backends.GROUP, entry.name, entry.value, package, why))
    return found


def _presets() -> list[Outcome]:
    presets.presets()  # loads them, once
    return outcomes(presets.GROUP)


def table(rows: list[Outcome]) -> list[str]:
    lines = []
    for row in rows:
        where = f"from {row.package}" if row.package else "from an unknown package"
        state = "loaded" if row.refused is None else f"left out: {row.refused}"
        lines.append(f"  {row.name:<14} {row.value:<44} {where}: {state}")
    return lines


def _plugins(args: argparse.Namespace) -> int:
    groups = [
        (environments.GROUP, outcomes(environments.GROUP)),
        (settings.GROUP, outcomes(settings.GROUP)),
        (presets.GROUP, _presets()),
        (backends.GROUP, _backends()),
    ]
    for group, rows in groups:
        print(group)
        print("\n".join(table(rows)) if rows else "  (none installed)")
    return 0
