"""The evidence rules measured against runs labelled by reading (part of ``python -m evals
grader-check``).

The answer corpora measure how an answer is read; this one measures what counts as having seen
the fact. Each row (``lab/data/evidence-labelled.jsonl``) names a committed task run (its
run file and run id: the state file beside it holds every call and result), its task, the
``kind`` of evidence in question (a listing, a read taken as evidence, a git history) and the
label a reader gave after reading the calls and results: did the run receive a result that
shows the fact the question asks about, whatever the answer said. Each run is replayed
through its task's evidence checks as they are today.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.errors import EvalError
from evals.markdown import table
from evals.record import kept_file, read_text
from evals.scoring.evidence import RunEvidence
from evals.stats import wilson
from evals.tasks import EVIDENCE_KINDS, Task
from evals.tasks.named import load_named
from harness.state import RunState
from lab.studies.corpus import read_labelled

EVIDENCE_CORPUS = Path(__file__).parents[1] / "data" / "evidence-labelled.jsonl"
ROOT = Path(__file__).parents[2]


class EvidenceRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_set: str
    task: str
    ref: str  # RUN_FILE#RUN_ID, the run file relative to the repository
    kind: Literal["listing", "read as evidence", "git history"]
    label: bool  # a result the run received shows the fact
    reason: str


class EvidenceCorpusError(EvalError):
    """A row that cannot be replayed; the message names the corpus, line and why."""


@dataclass(frozen=True)
class Judged:
    row: EvidenceRow
    credited: bool

    @property
    def agrees(self) -> bool:
        return self.credited == self.row.label


def read_rows(path: Path = EVIDENCE_CORPUS) -> list[EvidenceRow]:
    return read_labelled(path, EvidenceRow, EvidenceCorpusError)


def _state(row: EvidenceRow) -> RunState:
    run_file, _, run_id = row.ref.partition("#")
    path = kept_file(ROOT / run_file, f"{run_id}.json")
    if path is None:
        raise EvidenceCorpusError(f"row {row.ref}: no state file beside {run_file}")
    return RunState.from_dict(json.loads(read_text(path)))


def judge(rows: list[EvidenceRow]) -> list[Judged]:
    sets: dict[str, dict[str, Task]] = {}
    judged = []
    for row in rows:
        if row.task_set not in sets:
            found = load_named(row.task_set)
            if found is None:
                raise EvidenceCorpusError(f"row {row.ref}: no task set {row.task_set!r}")
            sets[row.task_set] = {t.id: t for t in found.tasks}
        task = sets[row.task_set].get(row.task)
        if task is None:
            raise EvidenceCorpusError(f"row {row.ref}: {row.task_set} has no task {row.task!r}")
        evidence = RunEvidence(_state(row))
        checks = [c for c in task.checks if c.kind in EVIDENCE_KINDS]
        judged.append(Judged(row, bool(checks) and all(c.passes(evidence) for c in checks)))
    return judged


def section(judged: list[Judged], corpus: Path = EVIDENCE_CORPUS) -> str:
    agree = sum(j.agrees for j in judged)
    ci = wilson(agree, len(judged))
    kinds = sorted({j.row.kind for j in judged})
    by_kind = [
        [
            kind,
            sum(j.row.kind == kind for j in judged),
            sum(j.row.label for j in judged if j.row.kind == kind),
            sum(j.agrees for j in judged if j.row.kind == kind),
        ]
        for kind in kinds
    ]
    wrong = [j for j in judged if not j.agrees]
    return "\n".join(
        [
            "## The evidence rules against runs labelled by reading",
            "",
            f"`{corpus.name}`: {len(judged)} committed task runs, each labelled by reading its "
            "calls and results (did a result the run received show the fact asked about?), "
            "replayed through the task's evidence checks as they are today.",
            "",
            f"Agreement: {agree}/{len(judged)} = {100 * agree / max(len(judged), 1):.1f} %, 95 % "
            f"interval [{100 * ci.low:.1f}, {100 * ci.high:.1f}] %.",
            "",
            table(["kind", "runs", "labelled shown", "agree"], by_kind),
            f"Every disagreement ({len(wrong)}):",
            "",
            table(
                ["run", "task", "label", "checks", "reason"],
                [
                    [
                        j.row.ref,
                        j.row.task,
                        "shown" if j.row.label else "not shown",
                        "credited" if j.credited else "refused",
                        j.row.reason,
                    ]
                    for j in wrong
                ],
            )
            if wrong
            else "None.\n",
        ]
    )
