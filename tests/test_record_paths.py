"""Records name their transcripts relative to the run file: a run file and its ``.runs``
folder move together, and a committed record names no path of the machine that ran it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evals.record import committed, kept_at, read_records, relink

ROOT = Path(__file__).resolve().parents[1]


def committed_run_files() -> list[Path]:
    return sorted(
        p for p in committed(ROOT / "results", "**/*.jsonl") if not p.parent.name.endswith(".runs")
    )


def test_every_committed_record_names_its_trace_beside_its_run_file() -> None:
    named = 0
    for run_file in committed_run_files():
        for line in read_records(run_file):
            recorded = line.get("trace_path")
            if not recorded:
                continue
            named += 1
            assert not Path(recorded).is_absolute(), (run_file, recorded)
            assert kept_at(run_file, recorded).exists(), (run_file, recorded)
    assert named > 1000  # the leaderboard's records alone name 2,328


def test_relink_rewrites_a_machine_path_and_nothing_else(tmp_path: Path) -> None:
    """A run file written with absolute paths on another machine, then moved: ``relink``
    names its traces beside it; every other byte stays."""
    source = next(
        p
        for p in committed_run_files()
        if p.parent.name == "runs" and (p.with_suffix(".runs")).is_dir()
    )
    run_file = tmp_path / "moved" / source.name
    run_file.parent.mkdir()
    shutil.copytree(source.with_suffix(".runs"), run_file.with_suffix(".runs"))
    lines = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.get("trace_path"):
            line["trace_path"] = "/elsewhere/machine/" + Path(line["trace_path"]).name
    run_file.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    before = [dict(x) for x in read_records(run_file)]

    assert relink(run_file) == sum(1 for x in lines if x.get("trace_path"))
    after = read_records(run_file)
    for old, new in zip(before, after, strict=True):
        if old.get("trace_path"):
            assert new["trace_path"] == f"{source.stem}.runs/{Path(old['trace_path']).name}"
            assert kept_at(run_file, new["trace_path"]).exists()
        old.pop("trace_path", None), new.pop("trace_path", None)
        assert old == new
    assert relink(run_file) == 0  # once is enough
