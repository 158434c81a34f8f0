"""Saving and loading a run state: one JSON file per run, written atomically."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.state import SCHEMA_VERSION, RunState


class StateFileError(HarnessError):
    """A state file that cannot be used; the message names the file."""


def state_path(state_dir: str | Path, run_id: str) -> Path:
    return Path(state_dir) / f"{run_id}.json"


def save(state: RunState, state_dir: str | Path) -> Path:
    """Write the state so that a crash at any moment leaves the old file or the new one."""
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = state_path(folder, state.run_id)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{state.run_id}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(encoded(state))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return target


def encoded(state: RunState) -> str:
    """The state as JSON, the text ``json.dumps(state.to_dict())`` gives, made in one pass of
    the C encoder: a state is saved after every step, and copying it first
    (``dataclasses.asdict``) and streaming it out in pieces (``json.dump``) cost more than
    the rest of a scripted step."""
    return json.dumps(state, default=_fields, ensure_ascii=False)


def _fields(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"a run state holds {type(value).__name__}, which is not JSON")


def load(state_dir: str | Path, run_id: str) -> RunState:
    path = state_path(state_dir, run_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise StateFileError(f"{path}: no saved run {run_id!r} here") from exc
    except UnicodeDecodeError as exc:
        raise StateFileError(f"{path}: the state file is corrupt ({exc})") from exc
    return parse(text, path)


def parse(text: str, path: Path) -> RunState:
    """The run state in ``text``, read from ``path``; StateFileError naming the file if it is
    not one this harness reads."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateFileError(f"{path}: the state file is corrupt ({exc})") from exc
    if not isinstance(data, dict):
        raise StateFileError(f"{path}: the state file is corrupt (not a JSON object)")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StateFileError(
            f"{path}: schema version {version!r} is newer than this harness reads "
            f"({SCHEMA_VERSION}); upgrade loopbench to resume it"
        )
    try:
        return RunState.from_dict(data)
    except TypeError as exc:
        raise StateFileError(f"{path}: the state file is corrupt ({exc})") from exc
