"""The backends ``python -m serve_local --backend NAME`` can start, one line each.

An entry names the module and its ``from_args`` factory, which builds the backend from the
command line's arguments; the module is imported only when its backend is chosen (llama.cpp
and torch are heavy, and each is an optional install).
"""

from __future__ import annotations

import argparse
import importlib
from typing import cast

from serve_local.backends.base import Backend

BACKENDS: dict[str, str] = {
    "scripted": "serve_local.backends.scripted",
    "llama": "serve_local.backends.llama",
    "transformers": "serve_local.backends.transformers",
}
DEFAULT = "llama"


def build(args: argparse.Namespace) -> Backend:
    """The backend ``args.backend`` names, from its module's ``from_args``."""
    module = importlib.import_module(BACKENDS[args.backend])
    return cast(Backend, module.from_args(args))
