"""Typed answers: what an answer commits to, the strategies derived from each task, and the
grader against the labelled corpus."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evals.scoring.answers import commitment, credits
from evals.tasks import DEFAULT_TASKS, Facts, NumberIs, OneOf, TaskSet, YesNo, load_tasks
from evals.workspace.generate import generate
from lab.studies.grader_check import CORPUS, read_corpus, replay, summary
from lab.studies.strategies import KNOWN_HEDGE, judge
from tests.helpers import LAB, ROOT

FILES = ["errors.log", "access.log", "notes.txt"]
LARGEST = OneOf(kind="answer", type="one_of", expected="errors.log", candidates=FILES)
COUNT = NumberIs(kind="answer", type="number", expected=3, candidates=[1, 2, 3, 4, 5, 6])
EXISTS = YesNo(kind="answer", type="yes_no", expected=True, subject="memo.log")
MISSING = YesNo(kind="answer", type="yes_no", expected=False, subject="draft.csv")
SAYS = Facts(
    kind="answer",
    type="facts",
    expected=["draft.log"],
    facts={"draft.log": ["lantern", "juniper", "queue_depth"], "backlog.txt": ["nutmeg"]},
)
GEN_TEST = DEFAULT_TASKS.with_name("gen-test-s1000-n60.json")


@pytest.mark.parametrize(
    ("answer", "text", "right"),
    [
        # a ranked answer commits to its first
        (LARGEST, "errors.log is the largest (163 bytes), followed by access.log (77 bytes) "
         "and notes.txt (30 bytes).", True),
        (LARGEST, "errors.log is the largest; notes.txt is the smallest.", True),
        (LARGEST, "The files are access.log, errors.log and notes.txt. The largest is "
         "errors.log.", True),
        (LARGEST, "access.log does not mention it, but errors.log does.", True),
        # hedges, lists and competing claims commit to nothing
        (LARGEST, "errors.log or access.log", False),
        (LARGEST, "Either errors.log or notes.txt.", False),
        (LARGEST, "errors.log, access.log and notes.txt", False),
        (LARGEST, "- errors.log: 163 bytes\n- access.log: 77 bytes\n- notes.txt: 30 bytes", False),
        (LARGEST, "It is probably errors.log, but it might be access.log.", False),
        (LARGEST, "errors.log has 163 bytes, and access.log has 77 bytes.", False),
        (LARGEST, KNOWN_HEDGE, False),
        # a denial that names the file does not affirm it
        (LARGEST, "errors.log is not the largest.", False),
        (LARGEST, "errors.log.bak is the largest.", False),
        (COUNT, "There are three files: errors.log (163 bytes), access.log (77 bytes) and "
         "notes.txt (30 bytes).", True),
        (COUNT, "There are 3 files. errors.log says worker 7 timed out.", True),
        (COUNT, "3, 4, 5 or 6 files", False),
        (COUNT, KNOWN_HEDGE, False),
        (COUNT, "There are not 3 files.", False),
        (COUNT, "notes.txt has 3 bytes; there are 4 files.", False),
        (EXISTS, "memo.log is in the workspace.", True),
        (EXISTS, "The file named memo.log is 110 bytes in size.", True),
        (EXISTS, "Yes.", True),
        (EXISTS, "No, the workspace contains only a.txt", False),
        (EXISTS, "Yes or no.", False),
        (EXISTS, "memo.log may or may not exist.", False),
        (EXISTS, "a.txt  10 bytes\nmemo.log  110 bytes\nb.txt  20 bytes", False),
        (MISSING, "draft.csv is absent from the workspace.", True),
        (MISSING, "There is no such file.", True),
        (MISSING, "I could not find draft.csv.", True),
        (MISSING, "draft.txt exists.", False),
        (MISSING, KNOWN_HEDGE, False),
        # facts are stated where they are not denied, a negated list included
        (SAYS, "draft.log: lantern, queue_depth = 4691.", True),
        (SAYS, "It mentions a lantern and juniper, but not the archive.", True),
        (SAYS, "draft.log has no header; it sets queue_depth = 4691.", True),
        (SAYS, "The file draft.log does not contain any information about the lantern, queue "
         "depth, lease minutes, or Juniper status.", False),
        (SAYS, "Nothing about lantern, juniper or queue_depth is in draft.log.", False),
        (SAYS, "draft.log says lantern, and backlog.txt says nutmeg.", False),
    ],
)  # fmt: skip
def test_what_an_answer_commits_to(answer: Any, text: str, right: bool) -> None:
    assert credits(answer, text) is right, commitment(answer, text)


def test_numbers_are_read_as_written_and_measurements_are_not_counts() -> None:
    value = NumberIs(kind="answer", type="number", expected=2666, candidates=[2666, 5906, 1353])
    assert credits(value, "It is set to 2,666.")
    assert credits(value, "cache_mb = 2666")
    assert not credits(value, "2666 or 5906.")
    assert commitment(COUNT, "notes.txt is 3 bytes.").value is None
    assert commitment(COUNT, "three").value == 3


FACTS = {"facts: one file", "facts: every file"}
GEN_FAMILIES = {"one_of: largest", "one_of: smallest", "one_of: mentions", "number: count",
                "number: value", "yes_no", *FACTS}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "families"),
    [(DEFAULT_TASKS, {"one_of", "number", *FACTS}), (GEN_TEST, GEN_FAMILIES)],
    ids=["files6", "gen-test"],
)
def test_no_derived_strategy_finds_a_hole_in_the_committed_sets(
    path: Path, families: set[str], tmp_path: Path
) -> None:
    reports = asyncio.run(judge(load_tasks(path), tmp_path))
    assert [p for r in reports for p in r.problems()] == []
    assert {r.family for r in reports} == families
    hedges = [c for r in reports for c in r.cells.values() if c.hedge]
    assert hedges and all(c.tasks > 0 and c.credited == 0 for c in hedges)


@pytest.mark.parametrize(
    ("split", "seed"), [("dev", 1), ("dev", 2), ("test", 1001), ("test", 1002)]
)
def test_no_derived_strategy_finds_a_hole_in_fresh_seeds(
    split: str, seed: int, tmp_path: Path
) -> None:
    tasks = TaskSet.model_validate(generate(seed, 60, split))
    reports = asyncio.run(judge(tasks, tmp_path))
    assert [p for r in reports for p in r.problems()] == []
    # Clearly above chance only where the strategy is the family's own rule.
    above = {(r.family, s) for r in reports for s in r.above}
    assert above <= {
        ("one_of: largest", "largest"),
        ("one_of: smallest", "smallest"),
        ("facts: every file", "echo everything read"),
    }


def test_a_weak_reader_is_caught_by_the_derived_strategies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader of yes/no answers as the generated sets had one before typed answers (any
    "yes" affirms): the hedge "Yes or no." passes it, and the judge says so."""
    from evals.scoring import answers

    def weak(answer: Any, text: str) -> bool:
        if isinstance(answer, YesNo):
            return ("yes" in text.lower()) == answer.expected
        return credits(answer, text)

    monkeypatch.setattr(answers, "credits", weak)
    problems = [p for r in asyncio.run(judge(load_tasks(GEN_TEST), tmp_path)) for p in r.problems()]
    assert any("hedge 'hedge: or' credited" in p for p in problems), problems
    assert any("credited a wrong answer" in p for p in problems), problems


def test_the_grader_agrees_with_the_labelled_corpus() -> None:
    rows = read_corpus()
    assert len(rows) >= 300
    assert {r.source for r in rows} == {"run", "written"}
    assert {r.kind for r in rows} >= {"real", "paraphrase", "hedge", "near miss", "denial"}
    replayed = replay(rows)
    s = summary(replayed)
    assert s["hedges_credited"] == 0
    assert s["agreement"] >= 0.98, [(r.row.task, r.row.answer) for r in replayed if not r.agrees]


def test_every_real_corpus_row_names_a_committed_transcript() -> None:
    for row in read_corpus():
        if row.source == "run":
            assert row.ref is not None
            run_file, run_id = row.ref.split("#")
            # A bare file name is under results/runs/; another folder of results/ is named.
            folder = ROOT / "results" / ("runs" if "/" not in run_file else "")
            state = folder / run_file.replace(".jsonl", ".runs") / f"{run_id}.json"
            assert json.loads(state.read_text())["answer"] == row.answer, row.ref


def test_grader_check_cli_reports_and_fails_a_bad_corpus(tmp_path: Path) -> None:
    out = tmp_path / "grader.md"
    done = subprocess.run(
        [*LAB, "grader-check", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Every disagreement" in out.read_text()
    flipped = tmp_path / "flipped.jsonl"
    lines = CORPUS.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows[:20]:
        row["label"] = not row["label"]
    flipped.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    bad = subprocess.run(
        [*LAB, "grader-check", "--corpus", str(flipped)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert bad.returncode == 1 and "FAILS" in bad.stdout
    broken = tmp_path / "broken.jsonl"
    broken.write_text(lines[0] + "\n{not json\n")
    unreadable = subprocess.run(
        [*LAB, "grader-check", "--corpus", str(broken)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert unreadable.returncode != 0 and "broken.jsonl, line 2" in unreadable.stderr


def test_a_value_given_with_a_wrong_unit_is_still_the_value() -> None:
    """Three answers of the 1.5B's read-listed leaderboard run were refused because a number
    followed by "bytes" was read as a size, never as the value asked for."""
    value = NumberIs(
        kind="answer", type="number", expected=5516, candidates=[3521, 5516, 7182, 9881]
    )
    assert credits(value, 'The value of "batch_size" in catalog.md is 5516 bytes.')
    assert not credits(value, 'The value of "batch_size" in catalog.md is 7182 bytes.')
    # A bare candidate number still wins over a measurement beside it.
    count = NumberIs(kind="answer", type="number", expected=4, candidates=[3, 4, 5, 6])
    assert credits(count, "There are 4 files; the largest has 5 bytes.")
    assert not credits(count, "There are 3 files; the largest has 4 bytes.")


def test_a_file_the_workspace_does_not_hold_is_a_claim_of_its_own() -> None:
    """SmolLM2's "The largest file is manifest.txt, … the smallest file, roster.cfg" was
    credited for roster.cfg: manifest.txt, no candidate, was not read as a claim at all."""
    largest = OneOf(
        kind="answer", type="one_of", expected="roster.cfg", candidates=["roster.cfg", "ledger.md"]
    )
    answer = (
        "The largest file is manifest.txt, with 140 bytes, compared to the smallest file, "
        "roster.cfg, which has only 105 bytes."
    )
    assert commitment(largest, answer).value == "manifest.txt"
    assert not credits(largest, answer)
    # Denied, a file that is not there is no claim; named after the answer, it competes.
    assert credits(largest, "file1.txt does not exist. The largest file is roster.cfg.")
    assert not credits(largest, "The largest file is roster.cfg. I also found notes.txt.")
    # Names that are not files (SQL branches) are unaffected by file-shaped words.
    branch = OneOf(
        kind="answer", type="one_of", expected="Ninh Kieu", candidates=["Ninh Kieu", "Hong Bang"]
    )
    assert credits(branch, "Ninh Kieu, per the query in report.sql.")
