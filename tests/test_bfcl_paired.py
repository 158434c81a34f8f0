"""Two BFCL runs paired item by item (python -m evals bfcl-compare): the verdict is the exact
test's, relevance stays apart, failed requests are no outcome, and other items are refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals.cli import main
from evals.record import RunSpec
from evals.record.bfcl import BfclRun, ItemRecord
from evals.report.bfcl_paired import CALLS_TOGETHER, markdown, pair_runs
from evals.report.pairing import PairingError


def write_run(
    path: Path,
    label: str,
    outcomes: dict[str, list[bool]],
    failed: frozenset[str] = frozenset(),
    bfcl_eval: str = "2026.3.23",
) -> Path:
    """A run file: ``outcomes`` maps a category to each of its items' verdicts."""
    lines = []
    for category, verdicts in outcomes.items():
        for n, valid in enumerate(verdicts):
            item = f"{category}_{n}"
            lines.append(
                ItemRecord(
                    spec=RunSpec(label=label, model="m"),
                    bfcl=BfclRun(bfcl_eval=bfcl_eval),
                    id=item,
                    category=category,
                    question=f"question {item}",
                    valid=valid and item not in failed,
                    request_error="HTTP 503" if item in failed else None,
                ).line()
            )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_four_items_one_way_among_sixty_is_no_detected_difference(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", "grammar-off", {"multi_turn_base": [False] * 60})
    b = write_run(
        tmp_path / "b.jsonl", "grammar-lazy", {"multi_turn_base": [True] * 4 + [False] * 56}
    )
    [(category, p)] = pair_runs(a, b).rows
    assert category == "multi_turn_base"
    assert (p.tasks, p.correct_a, p.correct_b, len(p.only_b)) == (60, 0, 4, 4)
    assert p.p_value == pytest.approx(0.125)
    assert not p.detected
    assert "no difference detected" in p.sentence()
    assert "60 tasks detect a difference of 25 points" in p.sentence()


def test_eight_items_one_way_is_a_detected_difference(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", "a", {"simple_python": [False] * 20})
    b = write_run(tmp_path / "b.jsonl", "b", {"simple_python": [True] * 8 + [False] * 12})
    [(_, p)] = pair_runs(a, b).rows
    assert p.detected and p.p_value == pytest.approx(2 / 2**8)
    assert p.sentence().startswith("b is better by 40 points")


def test_relevance_stays_apart_and_the_call_categories_are_also_tested_together(
    tmp_path: Path,
) -> None:
    runs = {
        "simple_python": [True, False, False],
        "multiple": [False, True],
        "irrelevance": [True, True, True, True],
    }
    flipped = {c: [not v for v in verdicts] for c, verdicts in runs.items()}
    a = write_run(tmp_path / "a.jsonl", "a", runs)
    b = write_run(tmp_path / "b.jsonl", "b", flipped)
    rows = dict(pair_runs(a, b).rows)
    assert list(rows) == ["simple_python", "multiple", "irrelevance", CALLS_TOGETHER]
    together = rows[CALLS_TOGETHER]
    assert (together.tasks, together.correct_a, together.correct_b) == (5, 2, 3)
    assert (rows["irrelevance"].correct_a, rows["irrelevance"].correct_b) == (4, 0)


def test_a_failed_request_is_no_outcome_in_either_run(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", "a", {"irrelevance": [True] * 10})
    b = write_run(
        tmp_path / "b.jsonl",
        "b",
        {"irrelevance": [True] * 10},
        failed=frozenset({"irrelevance_0", "irrelevance_1", "irrelevance_2"}),
    )
    pairing = pair_runs(a, b)
    [(_, p)] = pairing.rows
    assert (p.tasks, p.correct_a, p.correct_b, p.only_a) == (7, 7, 7, [])
    assert (pairing.errors_a, pairing.errors_b) == (0, 3)
    assert "3 in b" in markdown(pairing)


def test_other_items_or_another_bfcl_eval_are_refused(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", "a", {"multi_turn_base": [True] * 5})
    fewer = write_run(tmp_path / "b.jsonl", "b", {"multi_turn_base": [True] * 3})
    with pytest.raises(PairingError, match="only a asked multi_turn_base_3, multi_turn_base_4"):
        pair_runs(a, fewer)
    older = write_run(
        tmp_path / "c.jsonl", "c", {"multi_turn_base": [True] * 5}, bfcl_eval="2025.1.1"
    )
    with pytest.raises(PairingError, match=re.escape("a 2026.3.23, c 2025.1.1")):
        pair_runs(a, older)


def test_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a.jsonl", "a", {"multi_turn_base": [False] * 6, "parallel": [True]})
    b = write_run(tmp_path / "b.jsonl", "b", {"multi_turn_base": [True] * 6})
    out = tmp_path / "paired.md"
    assert main(["bfcl-compare", str(a), str(b), "--out", str(out)]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert "| multi_turn_base | 6 | 0 | 6 | 0 | 6 | b is better by 100 points" in text
    assert "Categories only one run has, not paired: parallel" in text
    assert main(["bfcl-compare", str(a), str(tmp_path / "none.jsonl")]) == 1
    assert "none.jsonl: no such run file" in capsys.readouterr().err
