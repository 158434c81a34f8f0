"""The tool-call parser: every form small models emit, round trips, and junk (hypothesis)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from serve_local.toolcalls import parse_tool_calls

NAMES = ["list_files", "read_file", "delete_file", "scan_archive"]
Call = tuple[str, dict[str, Any]]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20)
)
arguments = st.dictionaries(st.text(min_size=1, max_size=10), json_scalars, max_size=4)
calls = st.lists(st.tuples(st.sampled_from(NAMES), arguments), min_size=1, max_size=3)


def obj(call: Call, key: str = "arguments") -> dict[str, Any]:
    return {"name": call[0], key: call[1]}


FORMS: dict[str, Callable[[list[Call]], str]] = {
    "qwen tags": lambda cs: "\n".join(
        f"<tool_call>\n{json.dumps(obj(c))}\n</tool_call>" for c in cs
    ),
    "bare objects, one per line": lambda cs: "\n".join(json.dumps(obj(c)) for c in cs),
    "a list": lambda cs: json.dumps([obj(c) for c in cs]),
    "fenced": lambda cs: "```json\n" + "\n".join(json.dumps(obj(c)) for c in cs) + "\n```",
    "parameters key": lambda cs: "\n".join(json.dumps(obj(c, "parameters")) for c in cs),
    "arguments as a string": lambda cs: "\n".join(
        json.dumps({"name": n, "arguments": json.dumps(a)}) for n, a in cs
    ),
    "arguments encoded twice": lambda cs: "\n".join(
        json.dumps({"name": n, "arguments": json.dumps(json.dumps(a))}) for n, a in cs
    ),
    "openai shape echoed": lambda cs: json.dumps(
        [{"type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for n, a in cs]
    ),
}


@given(calls, st.sampled_from(sorted(FORMS)))
def test_every_form_round_trips(cs: list[Call], form: str) -> None:
    parsed = parse_tool_calls(FORMS[form](cs), NAMES)
    assert parsed.calls == cs
    assert parsed.content is None


@given(calls, st.text(alphabet=st.characters(exclude_characters="{}[]<>`"), max_size=60))
def test_prose_around_calls_is_kept_as_content(cs: list[Call], prose: str) -> None:
    text = prose + "\n" + FORMS["qwen tags"](cs)
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.calls == cs
    assert parsed.content == (prose.strip() or None)


@given(st.text(max_size=200))
def test_junk_never_raises_and_never_invents_a_call(text: str) -> None:
    parsed = parse_tool_calls(text, NAMES)
    for name, args in parsed.calls:
        assert name in NAMES and isinstance(args, dict)
        assert name in text


@given(st.text(alphabet=st.characters(exclude_characters="{["), max_size=200))
def test_text_without_json_is_all_content(text: str) -> None:
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.calls == []
    assert parsed.content == (text.strip() or None)


@given(arguments)
def test_unknown_tool_name_stays_text(args: dict[str, Any]) -> None:
    text = f"<tool_call>\n{json.dumps({'name': 'rm_rf', 'arguments': args})}\n</tool_call>"
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.calls == [] and parsed.content == text


def test_a_call_one_brace_short_at_the_end_is_still_a_call() -> None:
    text = '{"name": "list_files", "arguments": {"type": "object", "properties": {}}'
    assert parse_tool_calls(text, NAMES).calls == [
        ("list_files", {"type": "object", "properties": {}})
    ]
    tagged = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}\n</tool_call>'
    assert parse_tool_calls(tagged, NAMES).calls == [("read_file", {"path": "a.txt"})]


def test_unparseable_json_stays_text() -> None:
    text = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"]\n</tool_call>'
    assert parse_tool_calls(text, NAMES).calls == []
    truncated = '<tool_call>{"name": "read_file", "arguments": {"path": "a'
    assert parse_tool_calls(truncated, NAMES).content == truncated


def test_unterminated_tag_with_complete_json_is_a_call() -> None:
    text = '<tool_call>\n{"name": "list_files", "arguments": {}}'
    assert parse_tool_calls(text, NAMES).calls == [("list_files", {})]


def test_no_tools_offered_means_no_calls() -> None:
    text = '{"name": "list_files", "arguments": {}}'
    assert parse_tool_calls(text, []).calls == []


def test_json_that_is_not_a_call_is_left_alone() -> None:
    text = 'The config is {"retries": 3} and {"name": "x"}.'
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.calls == [] and parsed.content == text
