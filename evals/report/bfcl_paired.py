"""Two BFCL runs item by item: does one preset, grammar or model do better on the same items?

``python -m evals bfcl-compare A.jsonl B.jsonl`` pairs the items (single-turn items, or
multi-turn conversations) both runs asked, category by category, with the same paired test as
every other comparison here (:func:`evals.report.pairing.paired_outcomes`: an exact sign test on
the items where the runs differ, the smallest detectable difference beside every "no
difference"). Relevance categories stay apart, as BFCL keeps them; the call categories are also
tested together, item by item, where a run has more than one. An item whose request failed is
no outcome (it counts in neither run). Runs under another ``bfcl-eval`` release, or that asked
other items of a category, are refused: their items are not the same tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals.bfcl.items import RELEVANCE
from evals.markdown import table
from evals.record.bfcl import ItemRecord, read_items
from evals.report.bfcl import categories_of
from evals.report.pairing import Paired, PairingError, paired_outcomes, unshared

CALLS_TOGETHER = "call categories together"


@dataclass(frozen=True)
class BfclPairing:
    label_a: str
    label_b: str
    rows: list[tuple[str, Paired]]  # (category or CALLS_TOGETHER, its paired test)
    left_out: list[str]  # categories only one run has
    errors_a: int  # items whose request failed, in no test
    errors_b: int


def _label(path: Path, records: list[ItemRecord]) -> str:
    return records[0].spec.label or path.stem


def _outcomes(records: list[ItemRecord]) -> dict[str, list[bool]]:
    return {r.id: [r.valid] for r in records if r.request_error is None}


def _check_same_items(a: list[ItemRecord], b: list[ItemRecord], label_a: str, label_b: str) -> None:
    versions = ({r.bfcl.bfcl_eval for r in a}, {r.bfcl.bfcl_eval for r in b})
    if versions[0] != versions[1]:
        raise PairingError(
            f"the runs were judged under different bfcl-eval releases: {label_a} "
            f"{', '.join(sorted(map(str, versions[0])))}, {label_b} "
            f"{', '.join(sorted(map(str, versions[1])))}"
        )
    questions_b = {r.id: r.question for r in b}
    for category in sorted({r.category for r in a} & {r.category for r in b}):
        ids_a = {r.id for r in a if r.category == category}
        ids_b = {r.id for r in b if r.category == category}
        if ids_a != ids_b:
            raise PairingError(
                f"{category}: the runs asked different items "
                f"({unshared(ids_a, ids_b, label_a, label_b, 'asked')}): run both with the same "
                "--categories, --limit and --seed"
            )
    for r in a:
        if r.id in questions_b and questions_b[r.id] != r.question:
            raise PairingError(f"item {r.id} was asked differently in {label_a} and {label_b}")


def pair_runs(path_a: Path, path_b: Path) -> BfclPairing:
    """B against A on every category both ran, and on their call categories together."""
    a, b = read_items(path_a), read_items(path_b)
    if not a or not b:
        raise PairingError(f"{path_a if not a else path_b} holds no BFCL item")
    label_a, label_b = _label(path_a, a), _label(path_b, b)
    if label_a == label_b:
        label_a, label_b = path_a.stem, path_b.stem
    _check_same_items(a, b, label_a, label_b)
    shared = [c for c in categories_of(a) if c in {r.category for r in b}]
    got_a, got_b = _outcomes(a), _outcomes(b)
    groups = [(c, [c]) for c in shared]
    calls = [c for c in shared if c not in RELEVANCE]
    if len(calls) > 1:
        groups.append((CALLS_TOGETHER, calls))
    rows = []
    for title, categories in groups:
        ids = {r.id for r in a if r.category in categories}
        pick_a = {k: v for k, v in got_a.items() if k in ids}
        pick_b = {k: v for k, v in got_b.items() if k in ids}
        if pick_a.keys() & pick_b.keys():
            rows.append((title, paired_outcomes(pick_a, pick_b, label_a, label_b)))
    left_out = sorted({r.category for r in a + b} - set(shared))
    errors = tuple(sum(r.request_error is not None for r in run) for run in (a, b))
    return BfclPairing(label_a, label_b, rows, left_out, *errors)


def markdown(pairing: BfclPairing) -> str:
    a, b = pairing.label_a, pairing.label_b
    head = ["category", "items", a, b, f"only {a}", f"only {b}", "verdict"]
    body = [
        [
            category,
            str(p.tasks),
            f"{p.correct_a:g}",
            f"{p.correct_b:g}",
            str(len(p.only_a)),
            str(len(p.only_b)),
            p.sentence(),
        ]
        for category, p in pairing.rows
    ]
    notes = [
        f"Items whose request failed are in neither column: {pairing.errors_a} in {a}, "
        f"{pairing.errors_b} in {b}."
    ]
    if pairing.left_out:
        notes.append("Categories only one run has, not paired: " + ", ".join(pairing.left_out))
    return "\n".join(
        [
            f"# BFCL, {b} against {a}, item by item",
            "",
            "Each item (a multi-turn conversation is one item) is a pair: right or wrong in each "
            "run as BFCL's checker judged it. The verdict is the exact sign test on the items "
            'where the runs differ; every "no difference detected" says what the items could '
            "have detected. Relevance categories are apart, as BFCL keeps them.",
            "",
            table(head, body) if body else "No category with an answered item in both runs.",
            *notes,
            "",
        ]
    )
