"""What is installed, registered once, before any task or run file is read: every environment
(this project's and those other packages declare under the ``loopbench.environments`` entry
point) with its record data and task fields.

Registration is explicit: each reader of a file (``evals.tasks.load_tasks``,
``evals.record.read_runs``, the CLI before any command) calls :func:`load` first, so what a
file means never depends on which module happened to be imported before it. The registry
(``evals.registry``) sits above the readers; :func:`load` imports it by its name,
the way an entry point is loaded, and it registers the built-in environments and the
plugins' through one function (``registry.installed``)."""

from __future__ import annotations

import importlib

REGISTRY = "evals.registry"


def load() -> None:
    """Every environment registered (once: later calls find it done)."""
    importlib.import_module(REGISTRY)
