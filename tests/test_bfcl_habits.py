"""What a BFCL run's records show, counted: repeated calls, turns without a call, reply shapes,
and two runs item by item."""

from __future__ import annotations

from typing import Any

from evals.record.bfcl import ItemRecord
from evals.report.bfcl_habits import agreement, conversation, replies


def _item(**fields: Any) -> ItemRecord:
    """A BFCL item record with what a test names; the rest plain."""
    calls = [{"name": c["function"], **c} for c in fields.pop("calls", [])]
    return ItemRecord.model_validate(
        {"spec": {"model": "m"}, "bfcl": {}, "id": "i", "category": "simple", "calls": calls,
         **fields}
    )  # fmt: skip


def _turn(*steps: tuple[list[tuple[str, str]], str | None]) -> dict[str, Any]:
    return {
        "steps": [
            {"calls": [{name: args} for name, args in calls], "results": [], "text": text}
            for calls, text in steps
        ]
    }


def test_a_conversation_counts_repeats_and_turns_without_a_call() -> None:
    mv = ("mv", '{"source": "a", "destination": "b"}')
    items = [
        _item(
            valid=False,
            error_type="multi_turn:instance_state_mismatch",
            force_quit=False,
            turns=[
                _turn(([mv], None), ([mv], None), ([mv, ("mkdir", '{"dir_name": "b"}')], None)),
                _turn(([], "To move it, use the mv function.")),  # prose only
                _turn(([], None)),  # nothing
                _turn(([mv], None)),  # not the call just before (mkdir was)
            ],
        ),
        _item(valid=True, error_type=None, force_quit=True, turns=[_turn(([mv], ""))]),
    ]
    c = conversation(items)
    assert (c["conversations"], c["passed"], c["force_quit"]) == (2, 1, 1)
    assert dict(c["failures"]) == {"instance_state_mismatch": 1}
    # mv, mv (repeat), mv (repeat), mkdir, mv; then a new conversation's mv (no repeat).
    assert (c["calls"], c["repeats"]) == (6, 2)
    assert (c["user_turns"], c["turns_with_call"], c["prose_only"], c["empty"]) == (5, 3, 1, 1)


def test_replies_are_counted_by_shape() -> None:
    call = {"function": "f", "arguments": "{}"}
    items = [
        _item(calls=[call], content=None, finish_reason="tool_calls"),
        _item(calls=[call, call], content=None, finish_reason="tool_calls"),
        _item(calls=[], content='```json\n{"name": "f", "arguments": {}}\n```'),
        _item(calls=[], content="def f():\n" + "x" * 10, finish_reason="length"),
        _item(calls=[call], schema_problems=["'a' is required"], request_error=None),
        _item(calls=[], content=None, request_error="HTTP 500"),
    ]
    r = replies(items)
    assert r == {
        "items": 6, "with_call": 3, "several_calls": 1, "fenced": 1, "call_text": 1,
        "cap": 1, "schema": 1, "errors": 1,
    }  # fmt: skip


def test_two_runs_agree_item_by_item() -> None:
    def item(i: str, valid: bool, args: str) -> ItemRecord:
        return _item(id=i, valid=valid, calls=[{"function": "f", "arguments": args}])

    a = [item("1", True, "{}"), item("2", False, '{"x": 1}'), item("3", True, "{}")]
    b = [item("1", True, "{}"), item("2", False, '{"x": 2}'), item("4", True, "{}")]
    assert agreement(a, b) == {"items": 2, "same_verdict": 2, "same_calls": 1}
