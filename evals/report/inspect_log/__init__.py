"""Run files as Inspect AI logs (``.eval``), written through Inspect's own log API, so
``inspect view`` and every tool that reads Inspect logs opens our runs. One exporter; one
sample mapper per record type: task runs (:mod:`.tasks`) and BFCL's items and conversations
(:mod:`.bfcl`), sharing the messages and stop reasons (:mod:`.common`)."""

from __future__ import annotations

from pathlib import Path

from evals.record import read_runs
from evals.record import run_files as find_run_files
from evals.report.inspect_log import bfcl, tasks
from evals.report.inspect_log.common import INSTALL, ExportError, require_inspect

__all__ = ["INSTALL", "ExportError", "export", "export_run"]


def export(run_files: list[Path], out: Path) -> list[Path]:
    """One ``.eval`` log in ``out`` per run file (folders are searched for run files)."""
    require_inspect()
    files = find_run_files(run_files)
    if not files:
        raise ExportError("no run files (*.jsonl) among " + ", ".join(map(str, run_files)))
    out.mkdir(parents=True, exist_ok=True)
    return [export_run(f, out / f"{f.stem}.eval") for f in files]


def export_run(run_file: Path, log_path: Path) -> Path:
    from inspect_ai.log import write_eval_log

    if bfcl.is_bfcl_run(run_file):  # BFCL's items and conversations, as its checker judged them
        write_eval_log(bfcl.eval_log(run_file), log_path, format="eval")
        return log_path
    records = read_runs(run_file)
    if not records:
        raise ExportError(f"{run_file}: no records")
    write_eval_log(tasks.eval_log(run_file, records), log_path, format="eval")
    return log_path
