"""The grader measured against answers labelled by reading: ``python -m lab grader-check``.

The corpus (``lab/data/labelled.jsonl``, with the lab's data) holds one row per
answer: the task it answers (task set and id), where it came from (``run``: a committed run,
with ``ref`` naming the run file and run id; ``written``: a paraphrase of a right answer or a
hard negative written for the purpose), its ``kind`` (real, paraphrase, hedge, hypothetical,
path echo, near miss, denial, wrong question), the answer as given, the label a reader gave
it and the reason in one line.

Each answer is replayed through the task's answer checks as they are today (the typed answer
and any text checks; the evidence checks are the grounding's business, tested apart). The
report gives the agreement, the false credits (labelled wrong, credited) and false refusals
(labelled right, refused), by source and kind, and lists every disagreement with what the
reader took the answer to commit to. The check fails below :data:`TARGET` agreement or when
any hedge is credited.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evals.errors import EvalError
from evals.markdown import table
from evals.scoring.answers import commitment
from evals.scoring.evidence import RunEvidence, stated
from evals.stats import wilson
from evals.tasks import ANSWER_KINDS, DEFAULT_TASKS, Task, TaskFileError, load_tasks
from harness.state import new_run
from lab.report.docs import fill
from lab.studies import evidence_check
from lab.studies.corpus import read_labelled
from lab.studies.heldout import SEED as HELDOUT_SEED

CORPUS = Path(__file__).parents[1] / "data" / "labelled.jsonl"
HELDOUT = Path(__file__).parents[1] / "data" / "heldout.jsonl"
TARGET = 0.98

Kind = Literal[
    "real",
    "paraphrase",
    "hedge",
    "near miss",
    "denial",
    "wrong question",
    "hypothetical",
    "path echo",
]


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_set: str
    task: str
    source: Literal["run", "written"]
    kind: Kind
    ref: str | None
    answer: str
    label: bool
    reason: str


class CorpusError(EvalError):
    """A corpus that cannot be read; the message names the file and line."""


def read_corpus(path: Path = CORPUS) -> list[Row]:
    return read_labelled(path, Row, CorpusError)


@dataclass(frozen=True)
class Replayed:
    row: Row
    credited: bool
    reading: str  # what the answer reader took it to commit to, and why

    @property
    def agrees(self) -> bool:
        return self.credited == self.row.label


def _task(row: Row, sets: dict[str, dict[str, Task]]) -> Task:
    if row.task_set not in sets:
        path = DEFAULT_TASKS.with_name(f"{row.task_set}.json")
        try:
            sets[row.task_set] = {t.id: t for t in load_tasks(path).tasks}
        except TaskFileError as exc:
            raise CorpusError(f"row for {row.task_set}/{row.task}: {exc}") from exc
    tasks = sets[row.task_set]
    if row.task not in tasks:
        raise CorpusError(f"row names task {row.task!r}, which {row.task_set} does not have")
    return tasks[row.task]


def replay(rows: list[Row]) -> list[Replayed]:
    sets: dict[str, dict[str, Task]] = {}
    out = []
    for row in rows:
        task = _task(row, sets)
        state = new_run("corpus", task.question)
        state.status, state.answer = "completed", row.answer
        checks = [c for c in task.checks if c.kind in ANSWER_KINDS]
        evidence = RunEvidence(state)
        credited = all(c.passes(evidence) for c in checks)
        reading = ""
        if task.answer is not None:
            read = commitment(task.answer, stated(row.answer))
            value = sorted(read.value) if isinstance(read.value, frozenset) else read.value
            reading = f"{value!r}: {read.why}"
        out.append(Replayed(row, credited, reading))
    return out


def summary(replayed: list[Replayed]) -> dict[str, Any]:
    confusion = Counter(
        ("credited" if r.credited else "refused", "right" if r.row.label else "wrong")
        for r in replayed
    )
    n = len(replayed)
    agree = sum(r.agrees for r in replayed)
    return {
        "rows": n,
        "agreement": agree / n if n else 0.0,
        "agreeing": agree,
        "right_credited": confusion["credited", "right"],
        "false_credits": confusion["credited", "wrong"],
        "false_refusals": confusion["refused", "right"],
        "wrong_refused": confusion["refused", "wrong"],
        "hedges_credited": sum(r.credited for r in replayed if r.row.kind == "hedge"),
    }


def passed(replayed: list[Replayed]) -> bool:
    s = summary(replayed)
    return bool(s["agreement"] >= TARGET and s["hedges_credited"] == 0)


DISAGREEMENT_HEAD = ["task", "label", "grader", "answer", "reason", "read as"]


def disagreement_rows(wrong: list[Replayed]) -> list[list[str]]:
    return [
        [
            f"{r.row.task_set}/{r.row.task}",
            "right" if r.row.label else "wrong",
            "credited" if r.credited else "refused",
            stated(r.row.answer)[:160],
            r.row.reason,
            r.reading,
        ]
        for r in wrong
    ]


def markdown(replayed: list[Replayed], corpus: Path) -> str:
    s = summary(replayed)
    by: dict[tuple[str, str], list[Replayed]] = {}
    for r in replayed:
        by.setdefault((r.row.source, r.row.kind), []).append(r)
    rows = [
        [
            source,
            kind,
            len(group),
            sum(r.row.label for r in group),
            sum(r.agrees for r in group),
            sum(r.credited and not r.row.label for r in group),
            sum(r.row.label and not r.credited for r in group),
        ]
        for (source, kind), group in sorted(by.items())
    ]
    wrong = [r for r in replayed if not r.agrees]
    disagreements = disagreement_rows(wrong)
    verdict = "passes" if passed(replayed) else "FAILS"
    return "\n".join(
        [
            "# The grader against labelled answers",
            "",
            f"`python -m lab grader-check` over `{corpus.name}`: {s['rows']} answers "
            "labelled by reading, replayed through each task's answer checks as they are "
            "today.",
            "",
            f"Agreement: {s['agreeing']}/{s['rows']} = {100 * s['agreement']:.1f} % "
            f"(target {100 * TARGET:.0f} %); hedges credited: {s['hedges_credited']}. "
            f"The check {verdict}.",
            "",
            table(
                ["", "labelled right", "labelled wrong"],
                [
                    ["credited", s["right_credited"], s["false_credits"]],
                    ["refused", s["false_refusals"], s["wrong_refused"]],
                ],
            ),
            "By source and kind:",
            "",
            table(
                [
                    "source",
                    "kind",
                    "rows",
                    "labelled right",
                    "agree",
                    "false credits",
                    "false refusals",
                ],
                rows,
            ),
            f"Every disagreement ({len(wrong)}):",
            "",
            table(DISAGREEMENT_HEAD, disagreements) if wrong else "None.\n",
        ]
    )


def heldout_section(replayed: list[Replayed], corpus: Path) -> str:
    """The held-out corpus: agreement with its 95 % interval, the grader's error rate on
    answers it was never tuned on, and every disagreement."""
    s = summary(replayed)
    ci = wilson(s["agreeing"], s["rows"])
    wrong = [r for r in replayed if not r.agrees]
    return "\n".join(
        [
            "## The held-out corpus: the grader's error rate",
            "",
            f"`{corpus.name}`: {s['rows']} answers drawn at random from the committed "
            "leaderboard, SQL and workflow runs (stratified by task family and model, seed "
            f"{HELDOUT_SEED}, `python -m lab grader-draw`), labelled by reading before their "
            "verdicts were looked at, never used to change the reader.",
            "",
            f"Agreement: {s['agreeing']}/{s['rows']} = {100 * s['agreement']:.1f} %, 95 % "
            f"interval [{100 * ci.low:.1f}, {100 * ci.high:.1f}] %: an error rate of "
            f"{100 * (1 - s['agreement']):.1f} %. False credits {s['false_credits']} of "
            f"{s['false_credits'] + s['wrong_refused']} labelled wrong; false refusals "
            f"{s['false_refusals']} of {s['right_credited'] + s['false_refusals']} labelled "
            "right.",
            "",
            f"Every disagreement ({len(wrong)}):",
            "",
            table(DISAGREEMENT_HEAD, disagreement_rows(wrong)) if wrong else "None.\n",
        ]
    )


README = Path(__file__).parents[2] / "README.md"
POLICIES = Path(__file__).parents[2] / "docs" / "policies.md"


def corpora_sentences(replayed: list[Replayed], held: list[Replayed]) -> str:
    """Both corpora's figures as docs/policies.md quotes them (``make grader-check``): the
    tuning corpus's size and agreement, then the held-out figure."""
    s = summary(replayed)
    kinds = Counter(r.row.kind for r in replayed)
    drawn = sum(r.row.source == "run" for r in replayed)
    return (
        f"The tuning corpus holds {s['rows']} answers ({drawn} taken from committed runs, "
        f"{s['rows'] - drawn} written for the purpose; {kinds['hedge']} hedges among them); the "
        f"checks agree with the reading on {s['agreeing']} ({100 * s['agreement']:.1f} %), "
        f"with {s['false_credits']} false credits ({s['hedges_credited']} hedges credited) and "
        f"{s['false_refusals']} false refusals. " + heldout_sentence(held)
    )


def heldout_sentence(replayed: list[Replayed]) -> str:
    """The held-out figure as the README quotes it (written there by ``make grader-check``)."""
    s = summary(replayed)
    ci = wilson(s["agreeing"], s["rows"])
    return (
        f"The grader agrees with the reading on {s['agreeing']} of {s['rows']} held-out "
        f"answers, {100 * s['agreement']:.1f} % (95 % interval {100 * ci.low:.1f}–"
        f"{100 * ci.high:.1f} %).\n"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--heldout",
        type=Path,
        default=HELDOUT,
        help="the held-out corpus, reported apart as the grader's error rate",
    )
    parser.add_argument(
        "--out", type=Path, help="also write the report here (.md, and .json beside it)"
    )


def main(corpus: Path, out: Path | None, heldout: Path | None = HELDOUT) -> int:
    try:
        replayed = replay(read_corpus(corpus))
        held = replay(read_corpus(heldout)) if heldout is not None else []
    except CorpusError as exc:
        print(f"grader-check: {exc}", file=sys.stderr)
        return 2
    text = markdown(replayed, corpus)
    if heldout is not None:
        text += "\n" + heldout_section(held, heldout)
    try:
        evidence = evidence_check.judge(evidence_check.read_rows())
    except evidence_check.EvidenceCorpusError as exc:
        print(f"grader-check: {exc}", file=sys.stderr)
        return 2
    text += "\n" + evidence_check.section(evidence)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        data = {
            "summary": summary(replayed),
            "heldout": summary(held) if held else None,
            "heldout_disagreements": [
                {**r.row.model_dump(), "credited": r.credited, "read_as": r.reading}
                for r in held
                if not r.agrees
            ],
            "disagreements": [
                {**r.row.model_dump(), "credited": r.credited, "read_as": r.reading}
                for r in replayed
                if not r.agrees
            ],
            "evidence": {
                "rows": len(evidence),
                "agreeing": sum(j.agrees for j in evidence),
                "disagreements": [
                    {**j.row.model_dump(), "credited": j.credited} for j in evidence if not j.agrees
                ],
            },
        }
        out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        if held and heldout == HELDOUT:
            fill(README, "grader-heldout", heldout_sentence(held))
            if corpus == CORPUS:
                fill(POLICIES, "grader-corpora", corpora_sentences(replayed, held))
        print(f"wrote {out} and {out.with_suffix('.json')}")
    evidence_agrees = sum(j.agrees for j in evidence) >= TARGET * len(evidence)
    return 0 if passed(replayed) and evidence_agrees else 1
