"""The leaderboard against the scripted provider: each entrant's run under a fixed name, the
command its own resume, the best per model and the paired tests down the ladder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evals.errors import EvalError
from evals.record import read_records
from evals.tasks import DEFAULT_TASKS
from harness.policies.base import UnknownSetting
from lab.studies.leaderboard import (
    Entrant,
    LeaderboardSettings,
    parse_entrants,
    run_file,
    run_leaderboard,
    write,
)
from tests.helpers import LAB, LAB_ENV

# Two "models" of the scripted server: one that answers every files6 task, one that guesses.
ENTRANTS = parse_entrants(
    "scripted:oracle:read-first,scripted:oracle:all-helps,scripted:adversary-guess:all-helps"
)


def test_entrants_are_parsed_and_bad_ones_refused() -> None:
    assert ENTRANTS[0] == Entrant("scripted:oracle", "read-first")
    with pytest.raises(EvalError, match="not MODEL:PRESET"):
        parse_entrants("qwen")
    with pytest.raises(EvalError, match="named twice"):
        parse_entrants("m:all-helps,m:all-helps")
    with pytest.raises(UnknownSetting, match="no preset 'no-such-policy'"):
        parse_entrants("m:no-such-policy")


async def test_the_ladder_runs_resumes_and_is_tested_rung_by_rung(
    scripted_url: str, tmp_path: Path
) -> None:
    settings = LeaderboardSettings(
        entrants=ENTRANTS, tasks=DEFAULT_TASKS, out=tmp_path, base_url=scripted_url
    )
    lines: list[str] = []
    md, js = await run_leaderboard(settings, echo=lines.append)
    data = json.loads(js.read_text())
    rows = {(r["model"], r["preset"]): r for r in data["rows"]}
    assert rows[("scripted:oracle", "all-helps")]["correct"] == 6
    assert rows[("scripted:adversary-guess", "all-helps")]["correct"] == 0
    assert all(r["errors"] == 0 and r["tasks"] == 6 for r in rows.values())
    # One best per model; the guesser has one entrant, so it is its own best.
    assert sum(r["best"] for r in rows.values()) == 2
    assert rows[("scripted:adversary-guess", "all-helps")]["best"]
    (rung,) = [c for c in data["comparisons"] if c["kind"] == "rung"]
    assert rung["a"] == "scripted:adversary-guess all-helps"
    assert rung["detected"] and rung["difference"] == 100.0
    assert rung["verdict"].startswith("scripted:oracle ")
    assert "is better by 100 points" in rung["verdict"]
    within = [c for c in data["comparisons"] if c["kind"] == "default against best"]
    # The oracle's two policies tie on every figure: the one named first is its best, and the
    # default policy (all-helps, files6's) is tested against it: no difference, with what six
    # tasks could have detected.
    assert rows[("scripted:oracle", "read-first")]["best"]
    assert not rows[("scripted:oracle", "all-helps")]["best"]
    (c,) = within
    assert (c["a"], c["b"]) == ("scripted:oracle all-helps", "scripted:oracle read-first")
    assert not c["detected"] and "6 tasks detect a difference of 72 points" in c["verdict"]
    text = md.read_text()
    assert "| `scripted:oracle` |" in text and "## Paired tests" in text
    assert "is better by 100 points" in text

    # Interrupted: one run's file cut back to a partial of two tasks, its records kept.
    cut = run_file(tmp_path, ENTRANTS[2])
    before = read_records(cut)
    partial = cut.with_name(cut.name + ".partial")
    partial.write_text("".join(cut.read_text().splitlines(keepends=True)[:2]))
    cut.unlink()
    md, _ = write(ENTRANTS, tmp_path)  # the report of what is finished names what is not
    assert (
        "Not finished yet: scripted:adversary-guess all-helps (2 of 6 task runs kept; "
        "`make leaderboard` goes on)." in md.read_text()
    )
    lines.clear()
    await run_leaderboard(settings, echo=lines.append)
    assert any("resuming" in line for line in lines)
    assert sum("every run is finished" in line for line in lines) == 1  # the oracle's
    after = read_records(cut)
    assert after[:2] == before[:2] and [r["task_id"] for r in after] == [
        r["task_id"] for r in before
    ]
    assert not partial.exists()


def test_the_report_alone_names_what_is_not_run(tmp_path: Path) -> None:
    base = [*LAB, "leaderboard", "--tasks", str(DEFAULT_TASKS)]
    base += ["--out", str(tmp_path), "--entrants", "m:all-helps", "--report-only"]
    empty = subprocess.run(base, capture_output=True, text=True, timeout=120, env=LAB_ENV)
    assert empty.returncode == 1 and "no finished leaderboard run" in empty.stderr
