"""Today's checks applied to runs recorded earlier: ``python -m lab rescore RUN_FILE|FOLDER``.

A record keeps its task's state file beside the run file (``RUN.runs/RUN_ID.json``), and the
state file holds everything a check reads: the answer, the transcript with every tool result,
the tool log and the status. Rescoring re-reads it, scores it with the task's checks as the
task file has them now, rewrites the record's ``checks`` and ``correct`` (noting the verdict it
replaced under ``rescored``), and rewrites the run's summaries. A record whose state file is
missing keeps its old verdict and is reported, never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.markdown import table
from evals.record import (
    NOT_RUN,
    RunRecord,
    code_version,
    kept_file,
    read_runs,
    read_text,
    run_files,
)
from evals.report.summary import write_summaries
from evals.run.runfiles import start_partial
from evals.scoring.claims import false_claims
from evals.scoring.evidence import score
from evals.scoring.verdict import right
from evals.tasks import TaskSet, load_tasks
from evals.tasks.named import TASKS_DIR, load_named
from harness.state import RunState


class RescoreError(EvalError):
    """A run file that cannot be rescored; the message names it and says why."""


@dataclass
class Rescored:
    run_file: Path
    runs: int
    before: int  # correct records before
    after: int  # correct records after
    first: int = 0  # correct records as first recorded, before any rescoring
    missing: list[str] = field(default_factory=list)  # task ids whose state file is missing
    # Verdicts that differ from the first recorded: "task_id e1: ✓ -> ✗"
    changed: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = f"{self.run_file.name}: {self.before}/{self.runs} -> {self.after}/{self.runs}"
        if self.changed:
            text += f"  ({'; '.join(self.changed)})"
        if self.missing:
            text += f"  [no state file, verdict kept: {', '.join(self.missing)}]"
        return text


def task_set_for(records: list[RunRecord], run_file: Path) -> TaskSet:
    """The task set a run was made from, as its file reads today: the one its records name,
    found by that name under the task folder (``evals.tasks.named``)."""
    names = {r.spec.task_set for r in records}
    (name,) = names if len(names) == 1 else (None,)
    if name is None:
        raise RescoreError(
            f"{run_file}: its records name no single task set ({names}); use --tasks"
        )
    taskset = load_named(name)
    if taskset is None:
        raise RescoreError(
            f"{run_file}: task set {name!r} is in no task file under {TASKS_DIR}; use --tasks"
        )
    return taskset


def _state(run_file: Path, run_id: str) -> RunState | None:
    path = kept_file(run_file, f"{run_id}.json")
    if path is None:
        return None
    try:
        return RunState.from_dict(json.loads(read_text(path)))
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise RescoreError(f"{path}: not a state file the harness can read ({exc})") from exc


def rescore_file(run_file: Path, tasks: TaskSet | None = None) -> Rescored:
    records = read_runs(run_file)
    if not records:
        raise RescoreError(f"{run_file}: no records")
    taskset = tasks or task_set_for(records, run_file)
    by_id = {t.id: t for t in taskset.tasks}
    result = Rescored(run_file, len(records), 0, 0)
    stamp = {"by": code_version(), "at": datetime.now(UTC).isoformat(timespec="seconds")}
    changed = False
    for record in records:
        before = record.correct
        result.before += before
        state = None if record.status == NOT_RUN else _state(run_file, str(record.run_id))
        task = by_id.get(record.task_id)
        if task is None:
            raise RescoreError(f"{run_file}: task {record.task_id!r} is not in {taskset.name}")
        if record.task_hash not in (None, task.task_hash):
            raise RescoreError(
                f"{run_file}: task {task.id!r} is not the one this run was asked: the record's "
                f"task hash is {record.task_hash}, {taskset.name}'s is now {task.task_hash} "
                "(its question, workspace or tools changed); rescore against the task file the "
                "run was made from, with --tasks"
            )
        if record.status != NOT_RUN and state is None:
            result.missing.append(record.task_id)
        verdicts = _verdicts(record)
        checks = None if state is None else _kept(score(task, state, verdicts), record, verdicts)
        rejudged = checks is not None and checks != record.checks
        if checks is not None and rejudged:
            record.checks = checks
            record.correct = right(checks, record.status)
            # The first verdict a record had stays named, however often it is rescored; a
            # record whose checks come out the same is left as it is.
            first = (record.rescored or {}).get("first_verdict", before)
            record.rescored = {**stamp, "first_verdict": first}
        hash_was, claims_were = record.checks_hash, record.false_claims
        if checks is not None or record.status == NOT_RUN:
            record.checks_hash = task.checks_hash  # judged by today's checks
        if record.status != NOT_RUN:
            record.false_claims = false_claims(task, record.answer)
        # Filling what an older record never had (no false claims, the checks' hash) is no
        # reason to rewrite its file; a verdict, a check or a claim that differs is.
        changed |= (
            rejudged
            or (hash_was is not None and record.checks_hash != hash_was)
            or (claims_were is not None and record.false_claims != claims_were)
        )
        after = record.correct
        first = bool((record.rescored or {}).get("first_verdict", after))
        result.after += after
        result.first += first
        if after != first:
            mark = {True: "✓", False: "✗"}
            result.changed.append(
                f"{record.task_id} e{record.epoch}: {mark[first]} -> {mark[after]}"
            )
    if changed:  # a file whose verdicts all stand is left as it was written
        _rewrite(run_file, records)
    return result


def _verdicts(record: RunRecord) -> dict[str, float]:
    """What the environment's own judge gave the run, as its record keeps it."""
    return record.environment.verdicts()


def _kept(
    checks: list[dict[str, Any]], record: RunRecord, verdicts: dict[str, float]
) -> list[dict[str, Any]]:
    """Today's checks, with the recorded verdict of each check whose evidence the state file
    does not hold: an ``after`` check's (its calls' results are not kept), and a ``judged``
    one's where the record keeps no reward."""
    recorded = {c["check"]: c["passed"] for c in record.checks or []}
    kept = {"after"} | (set() if verdicts else {"judged"})
    return [
        {**c, "passed": recorded[c["check"]]} if c["kind"] in kept and c["check"] in recorded else c
        for c in checks
    ]


def _rewrite(run_file: Path, records: list[RunRecord]) -> None:
    """The run file with its new verdicts, replaced in one step, and its summaries."""
    summary_json = run_file.with_suffix(".summary.json")
    try:
        elapsed = json.loads(summary_json.read_text(encoding="utf-8")).get("elapsed_ms")
    except (OSError, json.JSONDecodeError):
        elapsed = None
    # Written beside it, fsynced, then put in its place.
    start_partial(run_file, [r.line() for r in records])
    write_summaries(run_file, elapsed_ms=elapsed)


def markdown(results: list[Rescored]) -> str:
    """Each run file's score as first recorded and under today's checks."""
    rows = [
        [
            f"`{r.run_file.name}`",
            f"{r.first}/{r.runs}",
            f"{r.after}/{r.runs}",
            "; ".join(r.changed) or "–",
            ", ".join(r.missing) or "–",
        ]
        for r in results
    ]
    head = [
        "run file",
        "first recorded",
        "today's checks",
        "tasks whose verdict changed",
        "no state file",
    ]
    first, after = sum(r.first for r in results), sum(r.after for r in results)
    runs = sum(r.runs for r in results)
    return "\n".join(
        [
            "# Rescored runs",
            "",
            "Every run file's verdicts under the task file's checks as they are today "
            "(`python -m lab rescore`), beside the verdicts first recorded.",
            "",
            table(head, rows),
            f"Total: {first}/{runs} correct as first recorded, {after}/{runs} under today's "
            "checks.",
            "",
        ]
    )


def rescore(paths: list[Path], tasks: Path | None = None) -> list[Rescored]:
    files = run_files(paths)
    if not files:
        raise RescoreError(f"no run files (*.jsonl) in {', '.join(map(str, paths))}")
    taskset = load_tasks(tasks) if tasks else None
    return [rescore_file(f, taskset) for f in files]
