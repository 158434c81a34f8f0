"""Nesting of any depth and shape, from a model or a client: text or a 400, never a crash.

The limits are :mod:`serve_local.nesting`'s. Each case here raised ``RecursionError`` (a 500 on
the server, an eval ended for good) before those limits existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.scoring.evidence import stated
from evals.tasks import load_tasks
from serve_local.callshape import call_spans, scan_calls
from serve_local.callstream import CallStreamer
from serve_local.inprocess import running_server
from serve_local.nesting import (
    MAX_ARGUMENTS_DEPTH,
    deeper_than,
    text_deeper_than,
    value_deeper_than,
)
from serve_local.toolcalls import ToolSchemas, parse_tool_calls
from tests.fake_provider import answer, by_turn, server_app
from tests.nesting_cases import SHAPES, TOOLS, assert_within_limits_is_served, nested

SCHEMAS = ToolSchemas({t["function"]["name"]: t["function"]["parameters"] for t in TOOLS})
CALL = '{"name": "read_file", "arguments": {"path": "errors.log"}}'


def placements(deep: str) -> list[str]:
    """The places a model puts such a run: after prose, in a tag, in a fence, as a call's
    arguments, beside a real call."""
    return [
        "There are 3 files " + deep,
        f"<tool_call>{deep}</tool_call>",
        f"```json\n{deep}\n```",
        '{"name": "read_file", "arguments": ' + deep + "}",
        '<tool_call>{"name": "read_file", "arguments": {"path": ' + deep + "}}</tool_call>",
        CALL + " " + deep,
        deep + " " + CALL,
    ]


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(0, 3000), shape=st.sampled_from(SHAPES), where=st.integers(0, 6))
def test_reading_a_reply_survives_any_nesting(depth: int, shape: str, where: int) -> None:
    text = placements(nested(depth, shape))[where]
    spans = call_spans(text)
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    parsed = parse_tool_calls(text, SCHEMAS)
    for _, args in parsed.calls:
        assert not deeper_than(args, MAX_ARGUMENTS_DEPTH)
    stated(text)
    streamer = CallStreamer(SCHEMAS, parallel=True)
    for i in range(0, len(text), 500):
        streamer.feed(text[i : i + 500])
    streamer.rest(parsed.content, [])
    assert scan_calls(text, complete=False).settled <= len(text)


@pytest.mark.parametrize("shape", SHAPES)
def test_ten_thousand_brackets_are_text_and_a_real_call_beside_them_still_counts(
    shape: str,
) -> None:
    deep = nested(10_000, shape)
    assert parse_tool_calls("There are 3 files " + deep, SCHEMAS).calls == []
    assert stated("There are 3 files " + deep).startswith("There are 3 files")
    beside = parse_tool_calls(CALL + "\n" + deep, SCHEMAS)
    assert beside.calls == [("read_file", {"path": "errors.log"})]


def test_depth_is_measured_as_the_parser_counts_it() -> None:
    assert not text_deeper_than("[]", 1) and text_deeper_than("[[]]", 1)
    assert not text_deeper_than('["[[[[", {"a": "}}}"}]', 2)  # brackets in strings do not count
    assert not text_deeper_than('"\\"[[["', 0)  # nor after an escaped quote
    assert not text_deeper_than("]]]]][]", 1)  # stray closers do not lower the count below zero
    assert value_deeper_than("x [[[1]]] [", 2, 2) and not value_deeper_than("x [[[1]]] [", 2, 3)
    assert not value_deeper_than("[1] " + "[" * 100, 0, 1)  # the value closes first
    assert deeper_than([[[]]], 2) and not deeper_than([[[]]], 3)
    assert not deeper_than({"a": [1, {"b": 2}]}, 3) and deeper_than({"a": [1, {"b": []}]}, 3)
    chain: dict[str, Any] = {}
    for _ in range(100_000):  # far past the interpreter's recursion limit
        chain = {"a": chain}
    assert deeper_than(chain, 99_999)


# On the wire: the cases are in tests/nesting_cases.py, shared with the malformed-request suites
# of both routes (test_server.py, test_messages_api.py) and the llama backend's


def test_within_every_limit_is_served(scripted_url: str) -> None:
    assert_within_limits_is_served(scripted_url, "scripted:plan")


# Through an eval ------------------------------------------------------------------------------


async def test_an_eval_whose_model_answers_ten_thousand_brackets_finishes(tmp_path: Path) -> None:
    """Every task gets the same degenerate reply: each is scored wrong, every record written."""
    app = server_app(by_turn([(200, answer("There are 3 files " + "[" * 10_000))]), "brackets")
    out = tmp_path / "brackets.jsonl"
    with running_server(app) as url:  # type: ignore[arg-type]
        await run_eval(
            EvalSettings(serving=Serving(base_url=url, model="brackets"), out=out),
            echo=lambda _: None,
        )
    records = read_records(out)
    assert [r["task_id"] for r in records] == [t.id for t in load_tasks().tasks]
    assert all(r["status"] == "completed" for r in records)
    assert not any(r["correct"] for r in records)
    assert all(r["answer"].startswith("There are 3 files [[[") for r in records)
    json.dumps(records)  # the records themselves are plain data
