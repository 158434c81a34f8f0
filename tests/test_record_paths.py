"""Records name their transcripts relative to the run file: a run file and its ``.runs``
folder move together, and a committed record names no path of the machine that ran it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def _absolute_paths(value: object, where: tuple[str, ...] = ()) -> list[str]:
    """Every string of ``value`` that is an absolute path, outside the transcripts (what a
    model was shown is kept as it was shown)."""
    if isinstance(value, dict):
        return [
            p
            for key, item in value.items()
            if key not in ("messages", "content", "answer", "arguments")
            for p in _absolute_paths(item, (*where, str(key)))
        ]
    if isinstance(value, list):
        return [p for item in value for p in _absolute_paths(item, where)]
    if isinstance(value, str) and value.startswith("/") and "/" in value[1:] and "\n" not in value:
        return [f"{'.'.join(where)}: {value[:80]}"]
    return []


def test_no_committed_json_names_a_folder_of_the_machine_that_ran_it() -> None:
    """Every JSON file under results/ (run records, eval settings, summaries, benchmarks)
    names files relative to the repository: an eval.json once kept its task file as
    /work/main/evals/tasks/..."""
    import json

    found = {}
    checked = 0
    for path in committed(ROOT / "results", "**/*.json"):
        checked += 1
        paths = _absolute_paths(json.loads(path.read_text(encoding="utf-8")))
        if paths:
            found[str(path.relative_to(ROOT))] = paths[:3]
    assert checked > 1000 and found == {}


def test_a_saved_eval_names_its_task_file_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.run.settings import portable

    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    assert portable(tmp_path / "evals" / "mine.json") == "evals/mine.json"
    assert portable(Path("evals/mine.json")) == "evals/mine.json"
    assert portable(Path("/elsewhere/mine.json")) == "/elsewhere/mine.json"
