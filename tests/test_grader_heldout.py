"""The held-out grader corpus: drawn from committed runs, labelled, reported apart."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from evals.record import read_runs
from evals.scoring.evidence import RunEvidence
from evals.tasks import Presence
from evals.tasks.named import load_named
from lab.studies import evidence_check, grader_check
from lab.studies.heldout import SIZE, family

ROOT = Path(__file__).resolve().parents[1]


def test_every_held_out_row_is_a_committed_answer_and_labelled() -> None:
    rows = grader_check.read_corpus(grader_check.HELDOUT)
    assert len(rows) >= 200 and len(rows) >= SIZE
    records: dict[str, dict[str, str | None]] = {}
    for row in rows:
        assert row.source == "run" and row.kind == "real" and row.ref and row.reason
        file, run_id = row.ref.split("#")
        if file not in records:
            records[file] = {r.run_id: r.answer for r in read_runs(ROOT / file) if r.run_id}
        assert records[file][run_id] == row.answer, row.ref
    # Every family of the pool is drawn, and every model within it.
    drawn = {(family(r.task_set), r.ref.split("#")[0]) for r in rows if r.ref}
    assert {f for f, _ in drawn} == {"files6", "generated", "sql"}
    models = {(f, next(iter(read_runs(ROOT / file))).spec.model) for f, file in drawn}
    assert Counter(f for f, _ in models) == {"files6": 3, "generated": 3, "sql": 3}


def test_grader_check_reports_the_held_out_corpus_apart(tmp_path: Path) -> None:
    out = tmp_path / "grader-check.md"
    grader_check.main(grader_check.CORPUS, out, grader_check.HELDOUT)
    text = out.read_text()
    assert "## The held-out corpus: the grader's error rate" in text
    data = json.loads(out.with_suffix(".json").read_text())
    held = data["heldout"]
    assert held["rows"] == len(grader_check.read_corpus(grader_check.HELDOUT))
    assert f"Agreement: {held['agreeing']}/{held['rows']} = " in text
    assert "95 % interval [" in text
    assert len(data["heldout_disagreements"]) == held["rows"] - held["agreeing"]


def test_the_readme_quotes_the_held_out_figure_the_corpus_gives() -> None:
    from lab.report.docs import block

    held = grader_check.replay(grader_check.read_corpus(grader_check.HELDOUT))
    assert block(grader_check.README, "grader-heldout") == grader_check.heldout_sentence(held)


def test_the_evidence_rules_agree_with_runs_labelled_by_reading() -> None:
    """Every row names a committed run; the evidence checks agree with the reading on each,
    for every kind of evidence; a label turned over is a disagreement, and a read taken as
    evidence is refused by the checks that asked for a listing alone."""
    rows = evidence_check.read_rows()
    assert {r.kind for r in rows} == {"listing", "read as evidence", "git history"}
    assert any(r.label for r in rows) and not all(r.label for r in rows)
    judged = evidence_check.judge(rows)
    assert [j.row.ref for j in judged if not j.agrees] == []
    flipped = [r.model_copy(update={"label": not r.label}) for r in rows[:5]]
    assert not any(j.agrees for j in evidence_check.judge(flipped))
    read = next(r for r in rows if r.kind == "read as evidence" and r.label)
    task = next(t for t in load_named(read.task_set).tasks if t.id == read.task)  # type: ignore[union-attr]
    presence = next(c for c in task.checks if isinstance(c, Presence))
    state = evidence_check._state(read)
    assert presence.passes(RunEvidence(state))
    assert not presence.model_copy(update={"reads": []}).passes(RunEvidence(state))
