"""The ``sql`` task source: an analyst's questions about a generated bank, asked of a
read-only database through ``run_sql`` and ``describe`` (the loop-control chapter's own case).

``python -m evals generate --source sql --seed S --n N`` writes a task set; every task names
its database (the bank's seed and the fingerprint of its rows), so the same seed always gives
the same database and questions. Each question's expected answer is what its gold SQL returns
there; its candidates (what a question-blind answer chooses among) come from the same data. A
question is asked only where its answer is unique: no tie for the name asked, no other
candidate number within twice the tolerance.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

from evals.database.sql.bank import Bank, generate
from evals.database.sql.build import sqlite_file
from evals.database.sql.questions import KINDS_OF_QUESTION, Kind
from evals.tasks import TaskSet
from evals.tasks.sources import SPLITS
from harness.sql.sqlite import SQLiteDatabase
from harness.sql.tools import DESCRIBE_TOOL, RUN_SQL_TOOL

__all__ = ["SPLITS", "TOOLS", "default_seed", "set_name", "sql_intro", "tasks", "write"]

TOOLS = [RUN_SQL_TOOL, DESCRIBE_TOOL]
# How much larger than the runner-up a planted anomaly is, at least.
ANOMALY = {"unusual_withdrawal": 5.0, "unusual_day": 2.0}


def sql_intro(dialect: str) -> str:
    """What the system prompt says a run of this source's tasks works on."""
    name = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(dialect, dialect)
    return (
        "You are a careful data analyst. You answer questions about a bank's data from a "
        f"read-only {name} database with the tables branches, customers, accounts and "
        "transactions. Call describe to see their columns and run_sql to query them before "
        "you answer; give the figure or the names the data shows."
    )


def default_seed(split: str) -> int:
    return SPLITS[split].start


def set_name(seed: int, n: int, split: str | None) -> str:
    return f"sql-{split + '-' if split else ''}s{seed}-n{n}"


def _number(value: Any) -> float | None:
    return None if value is None else round(float(value), 2)


def _questions(kind: Kind, bank: Bank, db: SQLiteDatabase) -> list[dict[str, Any]]:
    """Every question of ``kind`` whose answer is unique, with its answer and candidates."""
    found: list[dict[str, Any]] = []
    params = kind.params(bank)
    if kind.shape == "number":
        values = [_number(db.query(kind.gold(p), 30, 1).rows[0][0]) for p in params]
        candidates = sorted({v for v in values if v is not None and v >= 0})
        for p, value in zip(params, values, strict=True):
            if value is None or value <= 0:
                continue
            near = [c for c in candidates if c != value and abs(c - value) <= 2 * kind.tolerance]
            if not near and len(candidates) >= 2:
                found.append({"params": p, "expected": value, "candidates": candidates})
        return found
    names = bank.names(kind.names_from or "customers")
    for p in params:
        rows = db.query(kind.sql(p), 30, 1000).rows
        if len(rows) <= kind.take or rows[kind.take - 1][1] == rows[kind.take][1]:
            continue  # a tie: no unique answer
        factor = ANOMALY.get(kind.name)
        if factor and float(rows[0][1]) < factor * float(rows[1][1]):
            continue  # nothing unusual here
        expected = [str(r[0]) for r in rows[: kind.take]]
        found.append({"params": p, "expected": expected, "candidates": names})
    return found


def _checks(kind: Kind, q: dict[str, Any]) -> list[dict[str, Any]]:
    if kind.shape == "number":
        answer = {
            "kind": "answer", "type": "number", "expected": q["expected"],
            "candidates": q["candidates"], "tolerance": kind.tolerance,
        }  # fmt: skip
        evidence = {
            "kind": "observed_value", "tool": RUN_SQL_TOOL, "number": q["expected"],
            "tolerance": kind.tolerance,
        }  # fmt: skip
        return [answer, evidence]
    if kind.shape == "name":
        answer = {
            "kind": "answer", "type": "one_of", "expected": q["expected"][0],
            "candidates": q["candidates"],
        }  # fmt: skip
    else:
        answer = {
            "kind": "answer", "type": "list", "expected": q["expected"],
            "candidates": q["candidates"],
        }  # fmt: skip
    return [answer, {"kind": "observed_value", "tool": RUN_SQL_TOOL, "texts": q["expected"]}]


def tasks(seed: int, n: int, split: str | None = None) -> TaskSet:
    """``n`` questions over bank ``seed``, the kinds taken in turn (a kind with no question
    left is skipped), each question's phrasing drawn from ``random.Random``."""
    bank = generate(seed)
    rng = random.Random(f"sql-{seed}")
    with tempfile.TemporaryDirectory(prefix="loopbench-sql-") as folder:
        db = SQLiteDatabase(sqlite_file(seed, Path(folder)))
        pools = {k.name: _questions(k, bank, db) for k in KINDS_OF_QUESTION}
    for pool in pools.values():
        rng.shuffle(pool)
    by_name = {k.name: k for k in KINDS_OF_QUESTION}
    chosen: list[tuple[Kind, dict[str, Any]]] = []
    while len(chosen) < n and any(pools.values()):
        for name, pool in pools.items():
            if pool and len(chosen) < n:
                chosen.append((by_name[name], pool.pop()))
    database = {"source": "bank", "seed": seed, "fingerprint": bank.fingerprint}
    items = []
    for i, (kind, q) in enumerate(chosen):
        phrasing = rng.choice(kind.phrasings)
        items.append(
            {
                "id": f"sql-{i + 1:03d}-{kind.name}",
                "question": phrasing.format(**q["params"]),
                "kind": kind.name,
                "tools": TOOLS,
                "database": database,
                "checks": _checks(kind, q),
            }
        )
    name = set_name(seed, n, split)
    description = (
        f"Generated sql family, seed {seed}: {len(items)} questions about bank {seed} "
        f"({', '.join(f'{len(v)} {k}' for k, v in bank.rows.items())} rows), "
        "asked of a read-only database through run_sql and describe."
    )
    return TaskSet.model_validate({"name": name, "description": description, "tasks": items})


def write(seed: int, n: int, out: Path, split: str | None = None) -> tuple[Path, TaskSet]:
    taskset = tasks(seed, n, split)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(taskset.model_dump(exclude_none=True), indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return out, taskset
