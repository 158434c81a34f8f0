"""The files of one eval: the run file (written whole at the end) and its ``.partial`` (a
record appended and fsynced as each task finishes)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from evals.record import read_runs


def durable_append(f: IO[str], record: dict[str, Any]) -> None:
    """One record on disk before anything else happens: a kill loses only tasks in flight."""
    f.write(json.dumps(record, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())


def start_partial(partial: Path, records: list[dict[str, Any]]) -> None:
    """The partial file holding just ``records``, replaced in one step."""
    tmp = partial.with_name(partial.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, partial)


def finish(partial: Path, out: Path, order: list[tuple[str, int]]) -> None:
    """The run file: the partial's records in task order, however they finished."""
    rank = {key: i for i, key in enumerate(order)}
    records = sorted(read_runs(partial), key=lambda r: rank[(r.task_id, r.epoch)])
    start_partial(partial, [r.line() for r in records])
    os.replace(partial, out)
