"""The held-out grader corpus: answers drawn at random from the committed runs, to be labelled
by reading before anyone looks at their verdicts, and never used to change the reader.

``python -m lab grader-draw`` draws them: every answer of a committed leaderboard, SQL and
workflow run (not an error, not empty) falls in a stratum by task family and model, and each
stratum gives its share of the draw (at least :data:`FLOOR`), chosen with :data:`SEED`. The
draw is written without verdicts, with what a reader needs beside each answer (the question
and the typed answer the task expects); the reader adds ``label`` and ``reason`` to each row
and the labelled rows become ``lab/data/heldout.jsonl``. The draw is repeatable: the same
committed runs and seed give the same rows.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from evals.record import RunRecord, committed, is_error, read_runs
from evals.tasks import DEFAULT_TASKS, Task, load_tasks

SEED = 20261203
SIZE = 240
FLOOR = 8
SOURCES = ("results/leaderboard", "results/sql", "results/workflows")


def family(task_set: str) -> str:
    if task_set.startswith("sql-"):
        return "sql"
    if task_set.startswith("gen-"):
        return "generated"
    return task_set


def candidates(root: Path) -> dict[tuple[str, str], list[tuple[Path, RunRecord]]]:
    """Every answer that could be drawn, by (family, model)."""
    strata: dict[tuple[str, str], list[tuple[Path, RunRecord]]] = defaultdict(list)
    for source in SOURCES:
        for run_file in committed(root / source):
            for record in read_runs(run_file):
                task_set = record.spec.task_set
                if is_error(record) or not (record.answer or "").strip() or not task_set:
                    continue
                if not (DEFAULT_TASKS.with_name(f"{task_set}.json")).exists():
                    continue
                strata[(family(task_set), record.spec.model)].append((run_file, record))
    return strata


def draw(root: Path, size: int = SIZE, seed: int = SEED) -> list[tuple[Path, RunRecord]]:
    """``size`` answers (about), each stratum its share of the pool, at least FLOOR."""
    strata = candidates(root)
    total = sum(len(v) for v in strata.values())
    rng = random.Random(seed)
    chosen: list[tuple[Path, RunRecord]] = []
    for key in sorted(strata):
        pool = strata[key]
        share = max(FLOOR, round(size * len(pool) / total))
        chosen += rng.sample(pool, min(share, len(pool)))
    return chosen


def _task(task_set: str, task_id: str, cache: dict[str, dict[str, Task]]) -> Task:
    if task_set not in cache:
        tasks = load_tasks(DEFAULT_TASKS.with_name(f"{task_set}.json")).tasks
        cache[task_set] = {t.id: t for t in tasks}
    return cache[task_set][task_id]


def rows(root: Path, chosen: list[tuple[Path, RunRecord]]) -> list[dict[str, Any]]:
    """The draw as the reader sees it: no verdict, the question and the expected answer."""
    cache: dict[str, dict[str, Task]] = {}
    out = []
    for run_file, record in chosen:
        assert record.spec.task_set is not None
        task = _task(record.spec.task_set, record.task_id, cache)
        out.append(
            {
                "task_set": record.spec.task_set,
                "task": record.task_id,
                "source": "run",
                "kind": "real",
                "ref": f"{run_file.relative_to(root).as_posix()}#{record.run_id}",
                "model": record.spec.model,
                "question": task.question,
                "expects": [
                    c.model_dump(exclude_none=True)
                    for c in task.checks
                    if c.kind in ("answer", "contains", "contains_any", "not_contains", "regex")
                ],
                "answer": record.answer,
            }
        )
    return out


def write_draw(root: Path, out: Path, size: int = SIZE, seed: int = SEED) -> int:
    drawn = rows(root, draw(root, size, seed))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in drawn))
    return len(drawn)
