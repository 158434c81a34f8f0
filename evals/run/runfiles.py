"""Writing a run file's ``.partial``: a record appended and fsynced as each job finishes, and
the file replaced whole in one step (``evals.run.driver`` writes through these)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any


def durable_append(f: IO[str], record: dict[str, Any]) -> None:
    """One record on disk before anything else happens: a kill loses only tasks in flight."""
    f.write(json.dumps(record, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())


def start_partial(partial: Path, records: list[dict[str, Any]]) -> None:
    """The partial file holding just ``records``, replaced in one step."""
    tmp = partial.with_name(partial.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, partial)
