"""The backends ``python -m serve_local --backend NAME`` can start, one line each.

An entry names the module, which declares its command-line options (``OPTIONS``) and builds
the backend from them (``from_args``). A backend module imports llama.cpp or torch only when
its backend is built (each is heavy, and an optional install), so listing every backend's
options for the parser costs no more than importing the modules.

Backends other packages declare under the ``loopbench.backends`` entry point, each naming its
module (``clock = "loopbench_clock.backend"``), come after these; one whose module fails to
import, or lacks ``OPTIONS`` or ``from_args``, is named in a warning and left out.
"""

from __future__ import annotations

import argparse
import importlib
import warnings
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, cast

from serve_local.backends.base import Backend
from serve_local.backends.options import Option
from serve_local.errors import StartupError

BUILT_IN: dict[str, str] = {
    "scripted": "serve_local.backends.scripted",
    "llama": "serve_local.backends.llama",
    "transformers": "serve_local.backends.transformers",
}
DEFAULT = "llama"
GROUP = "loopbench.backends"


class PluginWarning(UserWarning):
    """A backend plugin left out: which one, and why (``harness.plugins.PluginWarning``'s
    counterpart: this package imports nothing of ``harness``)."""


def _left_out(name: str, module: str, why: str) -> None:
    LEFT_OUT[(name, module)] = why
    package = PACKAGES.get(name, "an unknown package")
    warnings.warn(
        f"{GROUP}: plugin {name!r} ({module}, from {package}) left out: {why}",
        PluginWarning,
        stacklevel=3,
    )


def _backends() -> dict[str, str]:
    """This project's backends, then the plugins' by name (their modules, not yet imported); a
    plugin whose name is taken is left out, with a warning."""
    found = dict(BUILT_IN)
    for entry in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        if entry.dist is not None:
            PACKAGES.setdefault(entry.name, entry.dist.name)
        if entry.name in found:
            _left_out(entry.name, entry.value, f"a backend named {entry.name!r} is registered")
        else:
            found[entry.name] = entry.value
    return found


# The distribution each plugin backend comes from, by name.
PACKAGES: dict[str, str] = {}
# Why each plugin left out was left out, by its name and module (``loopbench plugins``).
LEFT_OUT: dict[tuple[str, str], str] = {}
# Every backend by name.
BACKENDS: dict[str, str] = _backends()


def _module(name: str) -> ModuleType | None:
    """The backend's module; a plugin's that fails to import or lacks what a backend module
    has is None, with a warning naming it."""
    try:
        module = _imported(BACKENDS[name])
        lacking = [a for a in ("OPTIONS", "from_args") if not hasattr(module, a)]
        if lacking:
            raise AttributeError(f"its module has no {', '.join(lacking)}")
        return module
    except (Exception, SystemExit) as exc:  # a plugin's failure (an exit too) is its own
        if name in BUILT_IN:
            raise
        _left_out(name, BACKENDS[name], f"{type(exc).__name__}: {exc}")
        return None


@cache
def _imported(module: str) -> ModuleType:
    return importlib.import_module(module)


def declared() -> dict[str, tuple[Option, ...]]:
    """Every backend's options, by backend name (a plugin left out has none)."""
    modules = {name: _module(name) for name in BACKENDS}
    return {name: tuple(m.OPTIONS) for name, m in modules.items() if m is not None}


def taken_by(backend: str, options: dict[str, Any]) -> dict[str, Any]:
    """Those of ``options`` (by name, as keywords) that ``backend`` declares: what a caller that
    serves models on any backend (the sweep) gives the one it starts."""
    own = {o.dest for o in declared()[backend]}
    return {k: v for k, v in options.items() if k in own}


def build(args: argparse.Namespace) -> Backend:
    """The backend ``args.backend`` names, from its module's ``from_args``."""
    module = _module(args.backend)
    if module is None:
        raise StartupError(f"backend {args.backend!r} could not be loaded (see the warning above)")
    return cast(Backend, module.from_args(args))
