"""The backends ``python -m serve_local --backend NAME`` can start, one line each.

An entry names the module, which declares its command-line options (``OPTIONS``) and builds
the backend from them (``from_args``). A backend module imports llama.cpp or torch only when
its backend is built (each is heavy, and an optional install), so listing every backend's
options for the parser costs no more than importing the modules.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, cast

from serve_local.backends.base import Backend
from serve_local.backends.options import Option

BACKENDS: dict[str, str] = {
    "scripted": "serve_local.backends.scripted",
    "llama": "serve_local.backends.llama",
    "transformers": "serve_local.backends.transformers",
}
DEFAULT = "llama"


def declared() -> dict[str, tuple[Option, ...]]:
    """Every backend's options, by backend name."""
    return {
        name: tuple(importlib.import_module(module).OPTIONS) for name, module in BACKENDS.items()
    }


def taken_by(backend: str, options: dict[str, Any]) -> dict[str, Any]:
    """Those of ``options`` (by name, as keywords) that ``backend`` declares: what a caller that
    serves models on any backend (the sweep) gives the one it starts."""
    own = {o.dest for o in declared()[backend]}
    return {k: v for k, v in options.items() if k in own}


def build(args: argparse.Namespace) -> Backend:
    """The backend ``args.backend`` names, from its module's ``from_args``."""
    module = importlib.import_module(BACKENDS[args.backend])
    return cast(Backend, module.from_args(args))
