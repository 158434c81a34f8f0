"""Run files on disk: the records of a JSONL file, the folders a run keeps beside it (each
task's state file and trace), and the gzipped copies of large ones."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.errors import RunFileError

# Run records are committed with each task's state file and trace; a file above this size is
# kept gzipped, so a runaway transcript does not bloat the repository.
COMPRESS_ABOVE = 64 * 1024


def slug(text: str) -> str:
    """``text`` as a file name: runs of other characters made one ``-``, at most 80 long."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80]


def keep_compact(path: Path) -> Path:
    """``path`` as kept: gzipped in its place when larger than COMPRESS_ABOVE."""
    if path.stat().st_size <= COMPRESS_ABOVE:
        return path
    packed = path.with_name(path.name + ".gz")
    # mtime 0: the same content always packs to the same bytes.
    with open(path, "rb") as src, gzip.GzipFile(packed, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return packed


def read_text(path: Path) -> str:
    """A kept file's text, whether or not it was gzipped."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    return path.read_text(encoding="utf-8")


def task_folder(run_file: Path) -> Path:
    """Where a run file's tasks keep their state files and traces."""
    return run_file.with_name(run_file.stem + ".runs")


def kept_file(run_file: Path, name: str) -> Path | None:
    """A task's file beside ``run_file`` (``RUN_ID.json``, ``RUN_ID.trace.jsonl``), plain or
    gzipped; None when it was not kept."""
    plain = task_folder(run_file) / name
    packed = plain.with_name(name + ".gz")
    return plain if plain.exists() else packed if packed.exists() else None


def beside(run_file: Path, path: Path) -> str:
    """``path`` as a record names it: relative to the run file's folder, so a run file and its
    ``.runs`` folder move together (a committed record names no path of the machine that ran
    it)."""
    return Path(os.path.relpath(path.resolve(), run_file.resolve().parent)).as_posix()


def kept_at(run_file: Path, recorded: str) -> Path:
    """The file a record names (``trace_path``): relative to its run file's folder, or, in a
    record written before paths were relative, as written."""
    path = Path(recorded)
    return path if path.is_absolute() else run_file.parent / path


def relink(run_file: Path) -> int:
    """Rewrite a run file's ``trace_path`` values relative to the run file, where the trace
    they name is in its ``.runs`` folder (found by name, wherever the record said it was);
    every other byte of the file is kept. Returns the records changed."""
    lines = run_file.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = 0
    for i, line in enumerate(lines):
        found = re.search(r'"trace_path": "((?:[^"\\]|\\.)*)"', line)
        if not found:
            continue
        name = Path(json.loads(f'"{found.group(1)}"')).name
        here = task_folder(run_file) / name
        if not here.exists():
            continue
        new = json.dumps(beside(run_file, here))
        if new != f'"{found.group(1)}"':
            lines[i] = line[: found.start(1) - 1] + new + line[found.end(1) + 1 :]
            changed += 1
    if changed:
        run_file.write_text("".join(lines), encoding="utf-8")
    return changed


def committed(folder: Path, pattern: str = "*.jsonl") -> list[Path]:
    """The files matching ``pattern`` (``**`` for every depth) under ``folder`` that the
    repository holds, in name order: what git tracks there, never a run a user's own eval has
    since written beside them (``make eval`` writes into ``results/runs/``). Outside a git
    checkout (an unpacked release), every matching file counts: no eval of the user's has run
    there yet.

    Docs generators and tests read committed figures through this; commands meant for users
    (compare, view, summaries) read the folders whole, the user's runs welcome.
    """
    found = sorted(folder.glob(pattern))
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "."],
            cwd=folder,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return found  # no git, or not a work tree: nothing tells a user's file apart
    tracked = {folder / name for name in os.fsdecode(listed).split("\0") if name}
    return [p for p in found if p in tracked]


def run_files(paths: Sequence[Path]) -> list[Path]:
    """The run files named, and those inside the folders named (``*.jsonl``, in name order;
    an unfinished ``.jsonl.partial`` only when named); a path that is neither is a
    :class:`RunFileError` that names it."""
    found: dict[Path, Path] = {}  # a file named twice (itself, and in its folder) is read once
    for path in paths:
        if path.is_dir():
            found.update((p.resolve(), p) for p in sorted(path.glob("*.jsonl")))
        elif path.is_file():
            found.setdefault(path.resolve(), path)
        else:
            raise RunFileError(f"{path}: no such run file or folder")
    return list(found.values())


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a missing file, or a line that is no JSON object, is a
    :class:`RunFileError` that names the file and the line."""
    records = []
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise RunFileError(f"{path}: cannot read the run file ({exc.strerror})") from exc
    with f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise RunFileError(
                        f"{path}, line {number}: not a JSON record ({exc.msg})"
                    ) from exc
                if not isinstance(record, dict):
                    raise RunFileError(f"{path}, line {number}: not a JSON object")
                records.append(record)
    return records
