"""Committed results survive a new user's first eval: a fresh clone, ``make eval``, no loss."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

# The venv running these tests; a clone uses it instead of building its own (-o: its stamp
# counts as up to date), so the test costs seconds, not an install.
VENV = Path(sys.executable).parents[1]


def _clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    return clone


def _make(clone: Path, *args: str, url: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args, f"VENV={VENV}", "-o", f"{VENV}/.installed-dev"],
        cwd=clone,
        env={**os.environ, "LLM_BASE_URL": url} if url else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _git_status(clone: Path) -> list[str]:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()


def _columns(summary: Path) -> list[str]:
    """The run columns of a summary's per-task table."""
    head = next(line for line in summary.read_text().splitlines() if line.startswith("| task |"))
    return [c.strip() for c in head.strip("|").split("|")][1:]


def test_a_fresh_clone_eval_keeps_every_committed_column(scripted_url: str, tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    committed = _columns(clone / "results" / "summary.md")
    assert committed, "results/summary.md should compare the committed runs"
    done = _make(
        clone, "eval", "EVAL_ARGS=--model scripted:oracle --label fresh-clone", url=scripted_url
    )
    assert done.returncode == 0, done.stdout + done.stderr
    local = clone / "results" / "local"
    assert _columns(local / "summary.md") == [*committed, "fresh-clone"]
    # The report opens on the new run, set against the committed references on files6.
    yours = (local / "report.html").read_text().split('<section id="yours">')[1]
    yours = yours.split("</section>")[0]
    assert "Your run: fresh-clone" in yours and 'class="references"' in yours
    assert "default model, default preset (all-helps)" in yours
    status = _git_status(clone)
    # Only new files: no committed run, state file, trace, summary, plot or report changed.
    assert status and all(line.startswith("?? ") for line in status), status
    new = [line[3:] for line in status]
    assert all(p.startswith(("results/runs/", "results/local/")) for p in new), new


# The tests that read committed figures under results/ (golden transcripts, docs blocks, every
# committed record), run again in a clone where a user's eval has just written its runs.
READ_RESULTS = [
    "tests/test_policy_replay.py",
    "tests/test_docs_figures.py",
    "tests/test_record.py",
    "tests/test_record_paths.py",
    "tests/test_markdown.py",
    "tests/test_grader_heldout.py",
]


def test_the_readme_order_eval_then_test_reads_only_committed_results(
    scripted_url: str, tmp_path: Path
) -> None:
    """A newcomer's `make eval`, then `make test`: the user's run files under results/runs/
    (a files6 run and a generated set's, whose names the docs' own globs would take) change
    neither the golden transcripts nor any docs block, and stay the only change."""
    clone = _clone(tmp_path)
    done = _make(clone, "eval", "EVAL_ARGS=--model scripted:oracle --label mine", url=scripted_url)
    assert done.returncode == 0, done.stdout + done.stderr
    generated = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--model", "scripted:oracle", "--label", "mine",
         "--tasks", "evals/tasks/gen-test-s1000-n60.json",
         "--out", "results/runs/20991231-000000-mine-gen-test-s1000-n60.jsonl"],
        cwd=clone, env={**os.environ, "LLM_BASE_URL": scripted_url},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert generated.returncode == 0, generated.stdout + generated.stderr
    runs = [line[3:] for line in _git_status(clone) if line.startswith("?? results/runs/")]
    assert any("gen-test" in p for p in runs) and any(p.endswith(".jsonl") for p in runs), runs
    before = _git_status(clone)

    checked = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *READ_RESULTS],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert " passed" in checked.stdout and "failed" not in checked.stdout
    after = _git_status(clone)
    # Only the user's own files: nothing committed rewritten, no golden file regenerated.
    assert after == before and all(line.startswith("?? ") for line in after), after
    assert all(line[3:].startswith(("results/runs/", "results/local/")) for line in after), after


def test_committed_lists_only_what_git_tracks(tmp_path: Path) -> None:
    from evals.record import committed

    clone = _clone(tmp_path)
    for folder in ("runs", "sql", "workflows"):
        where = clone / "results" / folder
        tracked = committed(where)
        assert tracked and all(p.parent == where for p in tracked), folder
        mine = where / "20991231-000000-mine.jsonl"
        mine.write_text("{}\n")
        assert mine in where.glob("*.jsonl")
        assert committed(where) == tracked
        assert mine not in committed(clone / "results", "**/*.jsonl")
    # Outside a git checkout every matching file counts.
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.jsonl").write_text("{}\n")
    assert committed(tmp_path / "loose") == [tmp_path / "loose" / "a.jsonl"]


def test_make_compare_with_no_run_files(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    for folder in ("runs", "workflows", "sql", "mcp", "tau2", "superseded"):
        subprocess.run(["rm", "-rf", str(clone / "results" / folder)], check=True)
    done = _make(clone, "compare", "report")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No run files yet" in (clone / "results" / "summary.md").read_text()
    assert "No run files yet" in (clone / "results" / "report.html").read_text()
    assert (clone / "results" / "report.png").read_bytes()[:4] == b"\x89PNG"
