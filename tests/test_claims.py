"""Right, with a false claim: what an answer states about the workspace besides its answer is
checked against the files, recorded apart and counted, and never moves a verdict."""

from __future__ import annotations

import asyncio
from pathlib import Path

from evals.record import read_runs
from evals.report.summary import summarize, summary_markdown
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.scoring import false_claims
from evals.scoring.answers import credits
from evals.tasks import DEFAULT_TASKS, load_tasks
from tests.helpers import ROOT

GEN = {t.id: t for t in load_tasks(ROOT / "evals/tasks/gen-test-s1000-n388.json").tasks}
SIX = {t.id: t for t in load_tasks(DEFAULT_TASKS).tasks}


def test_an_existence_answer_with_a_false_rank_is_right_and_flagged() -> None:
    """The 1.5B's "readme.log is the biggest" credited for existence by presupposition."""
    task = GEN["38-exists"]
    answer = 'The file "readme.log" is the biggest in size, with a size of 79 bytes.'
    assert task.answer is not None and credits(task.answer, answer)
    assert false_claims(task, answer) == ["calls readme.log the largest; it is not"]
    assert false_claims(task, 'Yes, the file "readme.log" exists.') == []


def test_sizes_ranks_counts_and_files_against_the_seed_files() -> None:
    task = SIX["largest"]  # errors.log 163 bytes, access.log 77, notes.txt 30
    check = lambda text: false_claims(task, text)  # noqa: E731
    assert check("errors.log is the largest at 163 bytes.") == []
    assert check("errors.log is the largest at 150 bytes.") == [
        "gives errors.log 150 bytes; it has 163"
    ]
    assert check("notes.txt is the biggest file.") == ["calls notes.txt the largest; it is not"]
    assert check("The smallest is notes.txt.") == []
    assert check("There are 3 files.") == [] and check("There are four files.") == [
        "says four files; the workspace holds 3"
    ]
    assert check("errors.log, followed by manifest.txt.") == [
        "names manifest.txt, which the workspace does not hold"
    ]
    # Denied or ranked, nothing false is stated.
    assert check("There is no manifest.txt; errors.log is the largest.") == []
    assert check("errors.log is the largest, followed by access.log and notes.txt.") == []


def test_tasks_without_a_known_workspace_are_not_checked() -> None:
    sql = load_tasks(ROOT / "evals/tasks/sql-test-s1000-n60.json").tasks[0]
    assert false_claims(sql, "The branch has 6 customers, see ghost.txt.") is None


def test_records_carry_the_claims_and_summaries_count_them(
    scripted_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run.jsonl"
    settings = EvalSettings(
        serving=Serving(base_url=scripted_url, model="scripted:oracle"), out=out
    )
    asyncio.run(run_eval(settings, echo=lambda _: None))
    records = read_runs(out)
    assert all(r.false_claims == [] for r in records)  # checked, nothing false
    assert summarize(records)["right_with_false_claim"] == 0
    # One right answer with a false claim beside it: counted apart, still right.
    flagged = records[0].model_copy(update={"false_claims": ["calls x the largest; it is not"]})
    mixed = [flagged, *records[1:]]
    summary = summarize(mixed)
    assert summary["right_with_false_claim"] == int(flagged.correct)
    assert summary["correct"] == summarize(records)["correct"]
    text = summary_markdown("run.jsonl", summary, mixed)
    assert f"Right, with a false claim: {int(flagged.correct)} of {summary['correct']}" in text
