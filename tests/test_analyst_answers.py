"""How an analyst's question went, read from its record: the shape of a wrong answer, the
first call and statement, and what followed the first failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals.database.data import DatabaseData
from evals.record import RunRecord, read_runs
from harness.replies import FINISH_BRIEFLY
from lab.report.analyst_answers import joins, shape, story

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "results" / "sql" / "qwen-coder-1.5b-analyst-hinted.jsonl"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("", "no answer"),
        (None, "no answer"),
        ("   \n", "no answer"),
        (FINISH_BRIEFLY, "the loop's words"),
        (
            '{"name": "run_sql", "arguments": {"query": "SELECT 1 FROM t"}}',
            "a call written as text",
        ),
        ("<tool_call>\nrun_sql\n</tool_call>", "a call written as text"),
        ("Run this:\n```sql\nSELECT COUNT(*) FROM transactions\n```", "explains a query"),
        ("The total is 1234.56.", "states a figure"),
        ("The account with the most transactions is customer_id 22.", "states a figure"),
        ("There were no deposits in May 2026.", "other prose"),
        ("Transactions on 2026-03-01 are not recorded.", "other prose"),
        ("I'm sorry, but I can't assist with that.", "other prose"),
    ],
)
def test_an_answer_takes_the_first_shape_that_matches(answer: str | None, expected: str) -> None:
    assert shape(answer) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT COUNT(*) FROM customers c JOIN branches b ON c.branch_id = b.id", True),
        ("select * from accounts a, customers c where a.customer_id = c.id", True),
        ("SELECT COUNT(*) FROM transactions WHERE kind = 'fee'", False),
        ("SELECT id FROM branches WHERE name = 'Hoan Kiem'", False),
        (
            "SELECT COUNT(*) FROM customers WHERE branch_id = "
            "(SELECT id FROM branches WHERE name = 'Hoan Kiem')",
            True,
        ),
        ("SELECT SUM(t.amount) FROM transactions AS t WHERE t.kind = 'fee'", False),
        ("SELECT COUNT(*) FROM transactions WHERE EXTRACT(MONTH FROM ts) = 3", False),
    ],
)
def test_a_statement_reads_two_tables_when_it_joins_them(sql: str, expected: bool) -> None:
    assert joins(sql) is expected


def _question(
    template: RunRecord, calls: list[tuple[str, str | None]], answer: str, **fields: Any
) -> RunRecord:
    """A record like ``template`` with these tool calls (name, the statement's error or None
    for describe's and a statement that ran) and this answer."""
    audit = [
        {"turn": i + 1, "sql": f"SELECT {i} FROM t", "ms": 1.0, "rows": 0, "cut": 0,
         "error": error, "timed_out": False, "refused_write": False}
        for i, (name, error) in enumerate(c for c in calls if c[0] == "run_sql")
    ]  # fmt: skip
    return template.model_copy(
        update={
            "tools_called": [name for name, _ in calls],
            "environment": DatabaseData(database="sqlite", audit=audit),
            "answer": answer,
            "correct": False,
            **fields,
        }
    )


def test_the_story_counts_what_each_record_did() -> None:
    template = read_runs(RUN)[0]
    records = [
        # A guess refused, describe, then prose: the 1.5B's usual question.
        _question(template, [("run_sql", "no such column"), ("describe", None)],
                  "You can run SELECT SUM(amount) FROM transactions."),
        # The same statement again after its failure counts as nothing new.
        _question(template, [("run_sql", "no such column"), ("run_sql", "no such column")],
                  "The total is 12."),
        # Describe first, a statement that ran, the right answer.
        _question(template, [("describe", None), ("run_sql", None)], "6", correct=True),
        # No call at all, the loop's words copied back, at the step cap.
        _question(template, [], FINISH_BRIEFLY, status="max_turns_exceeded"),
        # An error record says nothing about the model and is left out.
        _question(template, [("run_sql", "x")], "", status="error"),
    ]  # fmt: skip
    # The second record sent one statement twice: the audit's sql differs per entry, so
    # make them the same text.
    repeated = records[1].environment
    assert isinstance(repeated, DatabaseData) and repeated.audit
    repeated.audit[1]["sql"] = repeated.audit[0]["sql"]
    s = story(records)
    assert s["questions"] == 4 and s["correct"] == 1 and s["wrong"] == 3
    assert s["first_calls"] == {"run_sql": 2, "describe": 1, "none": 1}
    assert (s["with_statement"], s["first_failed"]) == (3, 2)
    assert s["describe_after_error"] == 1
    assert s["new_after_error"] == 0
    assert (s["statements"], s["failed_statements"]) == (4, 3)
    assert s["step_cap"] == 1
    assert s["wrong_shapes"] == {"the loop's words": 1, "explains a query": 1, "states a figure": 1}


def test_a_new_statement_after_a_failure_is_counted() -> None:
    template = read_runs(RUN)[0]
    record = _question(
        template, [("run_sql", "no such column"), ("describe", None), ("run_sql", None)], "6"
    )
    s = story([record])
    assert (s["new_after_error"], s["describe_after_error"]) == (1, 1)
