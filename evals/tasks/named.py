"""A committed task set found by its name, as run records and labelled corpora name it (the
``name`` inside the file, which for a set over an MCP surface is not its file's name)."""

from __future__ import annotations

import json
from pathlib import Path

from evals.tasks import DEFAULT_TASKS, TaskSet, load_tasks

TASKS_DIR = DEFAULT_TASKS.parent


def named_path(name: str, folder: Path = TASKS_DIR) -> Path | None:
    """The task file under ``folder`` whose set is called ``name`` (``NAME.json`` first, then
    any file that names it inside), or None."""
    direct = folder / f"{name}.json"
    if direct.is_file():
        return direct
    for path in sorted(folder.rglob("*.json")):
        try:
            found = json.loads(path.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if found == name:
            return path
    return None


def load_named(name: str, folder: Path = TASKS_DIR) -> TaskSet | None:
    path = named_path(name, folder)
    return None if path is None else load_tasks(path)
