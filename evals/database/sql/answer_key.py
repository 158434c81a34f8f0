"""The SQL analyst's answer key for the scripted oracle: run the question's gold SQL, then
answer from its result. The gold SQL is a function of the question alone
(:mod:`evals.database.sql.questions`); serve_local knows no task source, so the eval hands this key
to the scripted backend (``--answer-key evals.database.sql.answer_key:answer``)."""

from __future__ import annotations

from evals.database.sql.questions import gold_for
from serve_local.public import Reply, Transcript, call, text


def _result_rows(result: str) -> list[list[str]]:
    """The rows of a run_sql result as harness.sql.tools writes it: a header, rows of cells
    joined by " | ", and a last line in parentheses."""
    lines = [line for line in result.splitlines() if line.strip()]
    return [line.split(" | ") for line in lines[1:] if not line.startswith("(")]


def answer(t: Transcript) -> Reply | None:
    """The oracle's reply to a question of the SQL analyst's; None for any other question."""
    gold = gold_for(t.question)
    if gold is None:
        return None
    sql, shape, take = gold
    if t.turn == 0:
        return call("c1", "run_sql", query=sql)
    rows = _result_rows(t.results.get("c1", ""))
    if not rows:
        return text("The query returned nothing, so I do not know.")
    if shape == "number":
        return text(f"The answer is {rows[0][0]}.")
    names = [r[0] for r in rows[:take]]
    if len(names) == 1:
        return text(f"It is {names[0]}.")
    return text(", ".join(names[:-1]) + f" and {names[-1]}.")
