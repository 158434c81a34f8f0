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
    assert "default model, default policy (all-helps)" in yours
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    # Only new files: no committed run, state file, trace, summary, plot or report changed.
    assert status and all(line.startswith("?? ") for line in status), status
    new = [line[3:] for line in status]
    assert all(p.startswith(("results/runs/", "results/local/")) for p in new), new


def test_make_compare_with_no_run_files(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    for folder in ("runs", "workflows", "sql", "superseded"):
        subprocess.run(["rm", "-rf", str(clone / "results" / folder)], check=True)
    done = _make(clone, "compare", "report")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No run files yet" in (clone / "results" / "summary.md").read_text()
    assert "No run files yet" in (clone / "results" / "report.html").read_text()
    assert (clone / "results" / "report.png").read_bytes()[:4] == b"\x89PNG"
