"""Splitting a constrained reply, as it is generated, into content and tool-call deltas."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.tools import default_tools
from serve_local.callstream import CallDelta, CallStreamer
from serve_local.toolcalls import ToolSchemas, parse_tool_calls
from tests.test_toolcalls import FORMS

SCHEMAS = ToolSchemas({t.name: t.parameters for t in default_tools()})
CALL_A = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.log"}}\n</tool_call>'
CALL_B = CALL_A.replace("a.log", "b.log")


def run(pieces: list[str], parallel: bool = True) -> tuple[CallStreamer, list[list[object]]]:
    streamer = CallStreamer(SCHEMAS, parallel)
    return streamer, [list(streamer.feed(p)) for p in pieces]


def chars(text: str) -> list[str]:
    return list(text)


def test_prose_streams_as_it_comes_but_a_possible_tag_waits() -> None:
    streamer, out = run(["Let me ", "look <", "tool", "_c", "all>"])
    # Blanks wait for the next word: the finished content is trimmed where a call follows.
    assert out[:2] == [["Let me"], [" look"]]
    assert out[2] == [] and out[3] == []  # "<tool_c" could still be the tag
    assert streamer.content_sent == "Let me look"


def test_a_reply_that_may_become_a_call_is_held_back() -> None:
    for start in ["\n", "```", "```json\n", "{"]:
        _, out = run([start])
        assert out == [[]], start


def test_a_call_goes_out_as_a_head_then_its_arguments_once_it_closes() -> None:
    _, out = run(chars(CALL_A))
    sent = [item for step in out for item in step]
    assert len(sent) == 2
    head, args = sent
    assert isinstance(head, CallDelta) and isinstance(args, CallDelta)
    assert (head.index, head.name, head.arguments) == (0, "read_file", "")
    assert head.id is not None and head.id.startswith("call_")
    assert args.id is None and json.loads(args.arguments) == {"path": "a.log"}
    # It went out as soon as its block closed, with the last character of the closing tag.
    assert out[-1] == [head, args] and all(not step for step in out[:-1])


def test_a_repeated_call_is_never_sent_twice() -> None:
    streamer, out = run(chars("\n".join([CALL_A, CALL_B, CALL_A])))
    heads = [i for step in out for i in step if isinstance(i, CallDelta) and i.id]
    assert [h.index for h in heads] == [0, 1]
    assert streamer.calls == [("read_file", {"path": "a.log"}), ("read_file", {"path": "b.log"})]


def test_parallel_false_sends_one_call_only() -> None:
    _, out = run(chars("\n".join([CALL_A, CALL_B])), parallel=False)
    assert len([i for step in out for i in step if isinstance(i, CallDelta) and i.id]) == 1


def test_arguments_the_schema_refuses_are_text_not_a_call() -> None:
    bad = '{"name": "read_file", "arguments": {"path": 3}}'
    streamer, out = run(chars(bad))
    assert not any(isinstance(item, CallDelta) for step in out for item in step)
    assert streamer.content_sent == bad


def test_rest_sends_what_the_finished_reply_adds() -> None:
    streamer, _ = run(chars(CALL_A))
    later = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "list_files", "arguments": "{}"},
    }
    already = {
        "id": "call_y",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.log"}'},
    }
    rest = streamer.rest(None, [already, later])
    assert [(d.index, d.id, d.name, d.arguments) for d in rest if isinstance(d, CallDelta)] == [
        (1, "call_x", "list_files", ""),
        (1, None, None, "{}"),
    ]
    prose, _ = run(["Hello", " there"])
    assert prose.rest("Hello there, friend.", []) == [", friend."]


def _split(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in pairwise(bounds)]


prose = st.text(alphabet=st.characters(exclude_characters="{}[]<>`"), max_size=30)
calls = st.lists(
    st.sampled_from(
        [
            ("list_files", {}),
            ("read_file", {"path": "a.log"}),
            ("read_file", {"path": "b.log"}),
            ("read_file", {"path": 3}),  # arguments the schema refuses: text, never a call
            ("rm_rf", {}),  # not offered: text
        ]
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300)
@given(
    calls,
    st.sampled_from(sorted(FORMS)),
    prose,
    prose,
    st.lists(st.integers(0, 400), max_size=12),
    st.booleans(),
)
def test_a_streamed_reply_carries_what_the_whole_reply_does(
    cs: list[tuple[str, dict[str, Any]]],
    form: str,
    before: str,
    after: str,
    cuts: list[int],
    parallel: bool,
) -> None:
    """Every call form the parser accepts, anywhere in the reply, in any token boundaries:
    the streamed content and calls are the finished reply's, each call once."""
    text = before + FORMS[form](cs) + after
    whole = parse_tool_calls(text, SCHEMAS, parallel=parallel)
    finished = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(whole.calls)
    ]
    streamer = CallStreamer(SCHEMAS, parallel)
    sent = [item for piece in _split(text, cuts) for item in streamer.feed(piece)]
    sent += streamer.rest(whole.content, finished)
    content = "".join(item for item in sent if isinstance(item, str))
    heads = [item for item in sent if isinstance(item, CallDelta) and item.id is not None]
    arguments = [item for item in sent if isinstance(item, CallDelta) and item.id is None]
    assert content == (whole.content or "")
    assert [(h.name, json.loads(a.arguments)) for h, a in zip(heads, arguments, strict=True)] == (
        whole.calls
    )
    assert [h.index for h in heads] == list(range(len(heads)))
