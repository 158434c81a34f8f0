"""The backends ``python -m serve_local --backend NAME`` can start, one line each.

An entry names the module, which declares its command-line options (``OPTIONS``) and builds
the backend from them (``from_args``). A backend module imports llama.cpp or torch only when
its backend is built (each is heavy, and an optional install), so listing every backend's
options for the parser costs no more than importing the modules.
"""

from __future__ import annotations

import argparse
import importlib
from typing import cast

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


def build(args: argparse.Namespace) -> Backend:
    """The backend ``args.backend`` names, from its module's ``from_args``."""
    module = importlib.import_module(BACKENDS[args.backend])
    return cast(Backend, module.from_args(args))
