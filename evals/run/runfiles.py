"""The files of one eval: the run file (written whole at the end), its ``.partial`` (a
record appended and fsynced as each task finishes), the summaries, and the saved settings a
resume goes on with."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from evals.run.record import read_runs
from evals.run.records import summarize, summary_markdown


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


def write_summaries(path: Path, elapsed_ms: float | None = None) -> dict[str, Any]:
    """``RUN.summary.json`` and ``RUN.summary.md`` from the run file; ``elapsed_ms``: the wall
    clock of the command that finished the eval (a resume's own part only)."""
    records = read_runs(path)
    summary = summarize(records)
    if elapsed_ms is not None:
        summary["elapsed_ms"] = elapsed_ms
    stem = path.with_suffix("")
    Path(f"{stem}.summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(f"{stem}.summary.md").write_text(summary_markdown(path.name, summary, records))
    return summary
