"""How the analyst's questions go, read from each record of a sql run: the first call, whether
the first statement failed and whether it joined tables, whether another statement followed the
first error, and what shape each wrong answer takes. docs/sql.md's prose rests on these tables
(``make sql-report`` writes them; a test rebuilds them from the committed runs).

An answer's shape is read from its text alone, first match wins:

- *no answer*: empty, or none came (the session ended first);
- *the loop's words*: the loop's own request to finish a cut-off reply, copied back;
- *a call written as text*: a JSON object naming a tool, or a ``<tool_call>`` block;
- *explains a query*: it holds a ``SELECT ... FROM`` statement instead of its result;
- *states a figure*: it holds a number that is not a year or a date;
- *other prose*: anything else (a refusal, a table's columns, "cannot be reached").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from evals.database.figures import audit
from evals.markdown import table
from evals.record import RunRecord, is_error
from evals.stats import wilson
from harness.replies import FINISH_BRIEFLY

SHAPES = (
    "no answer",
    "the loop's words",
    "a call written as text",
    "explains a query",
    "states a figure",
    "other prose",
)
_CALL = re.compile(r'<tool_call>|\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:')
_SQL = re.compile(r"\bselect\b.+?\bfrom\b", re.IGNORECASE | re.DOTALL)
_DATE = re.compile(r"\b(?:19|20)\d\d(?:-\d\d){0,2}\b")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
# A FROM clause up to the next clause or the end of its (sub)query, and a JOIN's table.
_FROM = re.compile(
    r"\bfrom\s+(.+?)(?=\b(?:where|group|order|having|limit|join|on|union)\b|[();]|$)",
    re.IGNORECASE | re.DOTALL,
)
_JOINED = re.compile(r"\bjoin\s+(\w+)", re.IGNORECASE)
# Functions whose arguments hold a FROM that names no table: EXTRACT(MONTH FROM ts).
_FROM_IN_CALL = re.compile(r"\b(?:extract|substring|trim|position)\s*\([^()]*\)", re.IGNORECASE)


def shape(answer: str | None) -> str:
    """The shape of an answer's text (the module's docstring gives the rules, in order)."""
    text = (answer or "").strip()
    if not text:
        return "no answer"
    if text == FINISH_BRIEFLY:
        return "the loop's words"
    if _CALL.search(text):
        return "a call written as text"
    if _SQL.search(text):
        return "explains a query"
    if _NUMBER.search(_DATE.sub(" ", text)):
        return "states a figure"
    return "other prose"


def tables(sql: str) -> set[str]:
    """The tables a statement names: after each FROM (a list, each with its alias), in a
    subquery too, and after each JOIN."""
    sql = _FROM_IN_CALL.sub(" ", sql)
    named = {m.lower() for m in _JOINED.findall(sql)}
    for clause in _FROM.findall(sql):
        named |= {part.split()[0].lower() for part in clause.split(",") if part.split()}
    return named


def joins(sql: str) -> bool:
    """Whether a statement reads more than one table (a JOIN, a list after FROM, or a
    subquery over another table)."""
    return len(tables(sql)) > 1


def story(records: Sequence[RunRecord]) -> dict[str, Any]:
    """How one run's questions went (error records left out, as in every accuracy)."""
    runs = [r for r in records if not is_error(r)]
    first_calls = Counter((r.tools_called or ["none"])[0] for r in runs)
    firsts = [audit(r)[0] for r in runs if audit(r)]
    failed_first = [r for r in runs if audit(r) and audit(r)[0].get("error")]
    statements = [a for r in runs for a in audit(r)]
    wrong = Counter(shape(r.answer) for r in runs if not r.correct)
    return {
        "questions": len(runs),
        "correct": sum(r.correct for r in runs),
        "first_calls": dict(first_calls.most_common()),
        "with_statement": len(firsts),
        "first_failed": len(failed_first),
        "first_joins": sum(joins(str(a.get("sql") or "")) for a in firsts),
        "new_after_error": sum(_new_after_error(r) for r in failed_first),
        "describe_after_error": sum(_describe_after_error(r) for r in failed_first),
        "turns": sum(r.turns for r in runs),
        "tokens": (sum(r.prompt_tokens for r in runs), sum(r.completion_tokens for r in runs)),
        "statements": len(statements),
        "failed_statements": sum(bool(a.get("error")) for a in statements),
        "step_cap": sum(r.status == "max_turns_exceeded" for r in runs),
        "session_timeouts": sum(
            r.status == "interrupted" and (r.interruption or {}).get("type") == "timeout"
            for r in runs
        ),
        "wrong": len(runs) - sum(r.correct for r in runs),
        "wrong_shapes": {s: wrong[s] for s in SHAPES if wrong[s]},
    }


def _new_after_error(record: RunRecord) -> bool:
    """Whether, after its first failed statement, the run sent a statement it had not sent."""
    entries = audit(record)
    first = next(i for i, a in enumerate(entries) if a.get("error"))
    seen = {" ".join(str(a.get("sql") or "").split()) for a in entries[: first + 1]}
    return any(" ".join(str(a.get("sql") or "").split()) not in seen for a in entries[first + 1 :])


def _describe_after_error(record: RunRecord) -> bool:
    """Whether the run called ``describe`` after its first failed statement (the audit holds
    the run_sql calls in the order of the tool log)."""
    first = next(i for i, a in enumerate(audit(record)) if a.get("error"))
    names = record.tools_called or []
    sql_at = [i for i, name in enumerate(names) if name == "run_sql"]
    return first < len(sql_at) and "describe" in names[sql_at[first] + 1 :]


def _shapes(s: dict[str, Any]) -> str:
    return "; ".join(f"{name}: {n}" for name, n in s["wrong_shapes"].items()) or "none wrong"


# The story's rows: a label and the cell it reads off one run's story.
_ROWS: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("correct", lambda s: f"{s['correct']}/{s['questions']}"),
    ("first call", lambda s: ", ".join(f"`{k}` {v}" for k, v in s["first_calls"].items())),
    ("first statement failed", lambda s: f"{s['first_failed']}/{s['with_statement']}"),
    ("first statement reads two tables or more",
     lambda s: f"{s['first_joins']}/{s['with_statement']}"),
    ("`describe` called after the first failure",
     lambda s: f"{s['describe_after_error']}/{s['first_failed']}"),
    ("a statement not sent before, after the first failure",
     lambda s: f"{s['new_after_error']}/{s['first_failed']}"),
    ("statements (failed)", lambda s: f"{s['statements']} ({s['failed_statements']})"),
    ("step cap reached", lambda s: s["step_cap"]),
    ("session time ran out", lambda s: s["session_timeouts"]),
    ("turns", lambda s: s["turns"]),
    ("tokens in / out", lambda s: f"{s['tokens'][0]:,} / {s['tokens'][1]:,}"),
    *((f"wrong answers: {name}", lambda s, n=name: s["wrong_shapes"].get(n, 0))
      for name in SHAPES),
]  # fmt: skip


def story_table(columns: Sequence[tuple[str, Sequence[RunRecord]]]) -> str:
    """Runs in columns, one row per step of the story."""
    stories = [story(records) for _, records in columns]
    rows = [
        [label, *cells]
        for label, cell in _ROWS
        if (cells := [cell(s) for s in stories])
        # A shape no run's wrong answer took is left out.
        and not (label.startswith("wrong answers:") and not any(cells))
    ]
    return table(["", *(name for name, _ in columns)], rows)


def ladder_table(rows: Sequence[tuple[str, str, Sequence[RunRecord]]]) -> str:
    """One row per model and question set: its correct answers with their interval, and what
    the transcripts show in counts."""
    head = ["model", "questions", "correct", "step cap reached", "session time ran out",
            "statements (failed)", "new statement after a failure",
            "wrong answers by shape"]  # fmt: skip
    body = []
    for model, questions, records in rows:
        s = story(records)
        n, k = s["questions"], s["correct"]
        body.append(
            [
                model,
                questions,
                f"{k}/{n}, {wilson(k, n).interval()}",
                s["step_cap"],
                s["session_timeouts"],
                f"{s['statements']} ({s['failed_statements']})",
                f"{s['new_after_error']}/{s['first_failed']}",
                _shapes(s),
            ]
        )
    return table(head, body)
