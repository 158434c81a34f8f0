"""What the loop-control chapter measures of its SQL analyst, measured on a run file of the
database environment's tasks: steps per question, the share of questions that hit an SQL
error, the share of those that recovered on the next step, statement timeouts, rows returned,
and wall time per question. Read from each record's audit (one entry per run_sql call) and
its turns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from statistics import median
from typing import Any

from evals.database.data import DatabaseData
from evals.markdown import table
from evals.record import RunRecord, is_error
from evals.stats import wilson

# The chapter's figures (illustrative internal estimates, about 60 questions, a frontier model).
CHAPTER = {
    "steps": "mostly 3–5",
    "cap_reached": "rarely",
    "error_share": "about 15 %",
    "recovered_share": "about 9 in 10",
}


def _on_database(record: RunRecord) -> bool:
    return isinstance(record.environment, DatabaseData)


def audit(record: RunRecord) -> list[dict[str, Any]]:
    """One entry per run_sql call of a task run on the database (none for any other)."""
    env = record.environment
    return (env.audit or []) if isinstance(env, DatabaseData) else []


def database_of(record: RunRecord) -> str | None:
    env = record.environment
    return env.database if isinstance(env, DatabaseData) else None


def _errors(record: RunRecord) -> list[dict[str, Any]]:
    return [a for a in audit(record) if a.get("error") and not a.get("timed_out")]


def recovered(record: RunRecord) -> bool | None:
    """After its first SQL error (a refused or failed statement, not a timeout), whether the
    next step ran a statement that succeeded; None when it hit no error."""
    errors = _errors(record)
    if not errors:
        return None
    turn = int(errors[0]["turn"])
    return any(a["turn"] == turn + 1 and not a.get("error") for a in audit(record))


def figures(records: Sequence[RunRecord]) -> dict[str, Any] | None:
    """The analyst's figures, or None for a run file with no sql task."""
    runs = [r for r in records if _on_database(r) and not is_error(r)]
    if not runs:
        return None
    steps = Counter(r.turns for r in runs)
    hit = [r for r in runs if _errors(r)]
    back = [r for r in hit if recovered(r)]
    calls = [a for r in runs for a in audit(r)]
    rows = [int(a["rows"]) for a in calls if a.get("rows") is not None]
    reused, generated = reply_reuse(runs)
    cap = max(((r.spec.loop or {}).get("max_turns") or 0 for r in runs), default=0)
    return {
        "questions": len(runs),
        "correct": sum(r.correct for r in runs),
        "steps": {str(k): steps[k] for k in sorted(steps)},
        "median_steps": median(r.turns for r in runs),
        "cap": cap or None,
        "cap_reached": sum(
            r.status == "max_turns_exceeded" or bool(cap and r.turns > cap) for r in runs
        ),
        "concluded": sum(r.turns > cap for r in runs) if cap else 0,
        "sql_calls": len(calls),
        "questions_with_error": len(hit),
        "recovered_next_step": len(back),
        "statement_timeouts": sum(bool(a.get("timed_out")) for a in calls),
        "refused_writes": sum(bool(a.get("refused_write")) for a in calls),
        "rows_returned": sum(rows),
        "median_rows": median(rows) if rows else None,
        "rows_cut_calls": sum(bool(a.get("cut")) for a in calls),
        "parallel_turns": sum(
            1 for r in runs for n in Counter(a["turn"] for a in audit(r)).values() if n > 1
        ),
        "median_wall_ms": median(r.wall_ms for r in runs),
        # Of each turn's prompt, the share the server took from its prefix cache
        # (cache_n / (cache_n + prompt_n), llama.cpp's timings), median per turn.
        "cache_reuse_by_turn": cache_reuse(runs),
        # Of the tokens each reply generated, how many the next turn found in the cache (the
        # reply as the template renders it back, against the tokens the model wrote).
        "reply_tokens": generated,
        "reply_tokens_reused": reused,
        "median_sql_ms": median(float(a["ms"]) for a in calls) if calls else None,
    }


def cache_reuse(records: Sequence[RunRecord]) -> dict[str, float]:
    """Per turn (1-based), the median share of the prompt taken from the prefix cache; empty
    where the server reports no timings."""
    shares: dict[int, list[float]] = {}
    for r in records:
        for i, t in enumerate(r.turn_timings or [], start=1):
            total = (t or {}).get("prompt_n", 0) + (t or {}).get("cache_n", 0)
            if t and total:
                shares.setdefault(i, []).append(t.get("cache_n", 0) / total)
    return {str(i): round(median(v), 4) for i, v in sorted(shares.items())}


def reply_reuse(records: Sequence[RunRecord]) -> tuple[int, int]:
    """(reused, generated): over every turn that follows a reply, the reply's tokens the next
    prompt took from the cache beyond the previous prompt, against the tokens it generated."""
    reused = generated = 0
    for r in records:
        timings = [t for t in r.turn_timings or [] if t]
        for before, after in pairwise(timings):
            prompt = before.get("prompt_n", 0) + before.get("cache_n", 0)
            reply = before.get("predicted_n", 0)
            generated += reply
            reused += max(0, min(reply, after.get("cache_n", 0) - prompt))
    return reused, generated


def database_kind(url: str | None) -> str:
    """The kind of database a run asked: its URL's port and user change with each server."""
    return url.partition("://")[0] if url else "?"


def _cells(f: dict[str, Any]) -> dict[str, str]:
    """One run's cell for each figure the chapter gives (and a few it does not)."""
    n, hit = f["questions"], f["questions_with_error"]
    steps = ", ".join(f"{k}: {v}" for k, v in f["steps"].items())
    three_to_five = sum(v for k, v in f["steps"].items() if 3 <= int(k) <= 5)
    cells = {
        "correct": f"{f['correct']}/{n}, {wilson(f['correct'], n).interval()}",
        "steps per question": f"median {f['median_steps']:g}; {steps}",
        "questions in 3–5 steps": f"{three_to_five}/{n}",
        "step cap reached": f"{f['cap_reached']}/{n}" + (f" (cap {f['cap']})" if f["cap"] else ""),
        "questions with an SQL error": f"{hit}/{n}, {wilson(hit, n).interval()}",
        "of those, recovered on the next step": f"{f['recovered_next_step']}/{hit}"
        if hit
        else "none hit an error",
        "statement timeouts": str(f["statement_timeouts"]),
        "writes refused": str(f["refused_writes"]),
        "SQL calls, rows returned": f"{f['sql_calls']} calls, {f['rows_returned']} rows "
        f"(median {f['median_rows']}), {f['rows_cut_calls']} cut at the row cap",
        "turns with parallel calls": str(f["parallel_turns"]),
        "median wall per question": f"{f['median_wall_ms'] / 1000:,.1f} s",
    }
    reuse = f.get("cache_reuse_by_turn") or {}
    if reuse:
        cells["prompt taken from the prefix cache"] = ", ".join(
            f"turn {k}: {100 * v:.0f} %" for k, v in reuse.items()
        )
    if f.get("reply_tokens"):
        cells["reply tokens found in the cache next turn"] = (
            f"{f['reply_tokens_reused']} of {f['reply_tokens']}"
        )
    return cells


# Each figure, and what the chapter says of it ("" where it says nothing).
THE_CHAPTER = {
    "correct": "",
    "steps per question": CHAPTER["steps"],
    "questions in 3–5 steps": "most",
    "step cap reached": CHAPTER["cap_reached"],
    "questions with an SQL error": CHAPTER["error_share"],
    "of those, recovered on the next step": CHAPTER["recovered_share"],
    "statement timeouts": "15 s each",
    "writes refused": "read-only replica",
    "SQL calls, rows returned": "",
    "turns with parallel calls": "overview + detail",
    "median wall per question": "",
    "prompt taken from the prefix cache": "the schema carried",
    "reply tokens found in the cache next turn": "",
}


def side_by_side(columns: list[tuple[str, dict[str, Any]]]) -> str:
    """Runs' figures in columns beside the chapter's; a figure no run has is left out."""
    cells = [(name, _cells(f)) for name, f in columns]
    rows = [
        [figure, said, *(c.get(figure, "") for _, c in cells)]
        for figure, said in THE_CHAPTER.items()
        if any(figure in c for _, c in cells)
    ]
    return table(["figure", "the chapter", *(name for name, _ in cells)], rows)


def markdown(f: dict[str, Any]) -> str:
    """The figures beside the chapter's."""
    return side_by_side([("this run", f)])
