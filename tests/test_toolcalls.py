"""The tool-call parser: every form small models emit, round trips, junk (hypothesis), and
what is never a call: definitions, schemas, schema keywords, arguments the schema refuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.tools import default_tools
from serve_local.toolcalls import SCHEMA_KEYWORDS, parse_tool_calls

NAMES = ["list_files", "read_file", "delete_file", "scan_archive"]
# Open schemas: any arguments validate, so the forms are what these tests vary.
OPEN = {name: {"type": "object"} for name in NAMES}
# The harness's real tools, whose schemas are closed (additionalProperties: false).
REAL = {t.name: t.parameters for t in default_tools()}
Call = tuple[str, dict[str, Any]]

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20)
)
arg_names = st.text(min_size=1, max_size=10).filter(lambda k: k not in SCHEMA_KEYWORDS)
arguments = st.dictionaries(arg_names, json_scalars, max_size=4)
calls = st.lists(st.tuples(st.sampled_from(NAMES), arguments), min_size=1, max_size=3).filter(
    lambda cs: len({json.dumps(c, sort_keys=True) for c in cs}) == len(cs)
)


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
    "wrapped in extra braces": lambda cs: "\n".join("{" + json.dumps(obj(c)) + "}}" for c in cs),
    "openai shape echoed": lambda cs: json.dumps(
        [{"type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for n, a in cs]
    ),
}


@given(calls, st.sampled_from(sorted(FORMS)))
def test_every_form_round_trips(cs: list[Call], form: str) -> None:
    parsed = parse_tool_calls(FORMS[form](cs), OPEN)
    assert parsed.calls == cs
    assert parsed.content is None


@given(calls, st.text(alphabet=st.characters(exclude_characters="{}[]<>`"), max_size=60))
def test_prose_around_calls_is_kept_as_content(cs: list[Call], prose: str) -> None:
    text = prose + "\n" + FORMS["qwen tags"](cs)
    parsed = parse_tool_calls(text, OPEN)
    assert parsed.calls == cs
    assert parsed.content == (prose.strip() or None)


@given(st.text(max_size=200))
def test_junk_never_raises_and_never_invents_a_call(text: str) -> None:
    parsed = parse_tool_calls(text, OPEN)
    for name, args in parsed.calls:
        assert name in NAMES and isinstance(args, dict)
        assert name in text


@given(st.text(alphabet=st.characters(exclude_characters="{["), max_size=200))
def test_text_without_json_is_all_content(text: str) -> None:
    parsed = parse_tool_calls(text, OPEN)
    assert parsed.calls == []
    assert parsed.content == (text.strip() or None)


@given(arguments)
def test_unknown_tool_name_stays_text(args: dict[str, Any]) -> None:
    text = f"<tool_call>\n{json.dumps({'name': 'rm_rf', 'arguments': args})}\n</tool_call>"
    parsed = parse_tool_calls(text, OPEN)
    assert parsed.calls == [] and parsed.content == text


def test_a_call_one_brace_short_at_the_end_is_still_a_call() -> None:
    text = '{"name": "list_files", "arguments": {}'
    assert parse_tool_calls(text, REAL).calls == [("list_files", {})]
    tagged = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}\n</tool_call>'
    assert parse_tool_calls(tagged, REAL).calls == [("read_file", {"path": "a.txt"})]


def test_unparseable_json_stays_text() -> None:
    text = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"]\n</tool_call>'
    assert parse_tool_calls(text, OPEN).calls == []
    truncated = '<tool_call>{"name": "read_file", "arguments": {"path": "a'
    assert parse_tool_calls(truncated, OPEN).content == truncated


def test_unterminated_tag_with_complete_json_is_a_call() -> None:
    text = '<tool_call>\n{"name": "list_files", "arguments": {}}'
    assert parse_tool_calls(text, OPEN).calls == [("list_files", {})]


def test_no_tools_offered_means_no_calls() -> None:
    text = '{"name": "list_files", "arguments": {}}'
    assert parse_tool_calls(text, {}).calls == []


def test_json_that_is_not_a_call_is_left_alone() -> None:
    text = 'The config is {"retries": 3} and {"name": "x"}.'
    parsed = parse_tool_calls(text, OPEN)
    assert parsed.calls == [] and parsed.content == text


# What is never a call. Each text below is something a model really wrote, or the shape of it.
SCHEMA_ECHOES = {
    "arguments that are the tool's schema": '{"name": "list_files", "arguments": '
    '{"type": "object", "properties": {}}}',
    "schema keywords mixed into real arguments": '<tool_call>\n{"name": "read_file", "arguments": '
    '{"path": "logs/rotating.log", "required": ["path"], "additionalProperties": false}}'
    "\n</tool_call>",
    "a copied OpenAI tool definition": json.dumps(
        {"type": "function", "function": default_tools()[1].spec()["function"]}
    ),
    "a copied definition without the wrapper": json.dumps(default_tools()[1].spec()["function"]),
    "the definition's schema given as parameters": '{"name": "read_file", "parameters": '
    '{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}',
    "the OpenAI wrapper around parameters": '{"type": "function", "function": '
    '{"name": "read_file", "parameters": {"path": "a.txt"}}}',
    "a definition list": json.dumps([t.spec() for t in default_tools()]),
}


@pytest.mark.parametrize("text", SCHEMA_ECHOES.values(), ids=list(SCHEMA_ECHOES))
def test_a_definition_or_schema_is_never_a_call(text: str) -> None:
    for tools in (REAL, OPEN):
        parsed = parse_tool_calls(text, tools)
        assert parsed.calls == [], parsed
        assert parsed.content == text.strip()


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {}}',  # required path missing
        '{"name": "read_file", "arguments": {"path": 7}}',  # wrong type
        '{"name": "read_file", "arguments": {"path": "a", "mode": "r"}}',  # not allowed
        '{"name": "list_files", "arguments": {"dir": "."}}',  # takes no arguments
        '{"name": "read_file", "arguments": ["a.txt"]}',  # not an object
    ],
)
def test_arguments_the_schema_refuses_are_not_a_call(text: str) -> None:
    parsed = parse_tool_calls(text, REAL)
    assert parsed.calls == [] and parsed.content == text


def test_a_declared_property_named_like_a_keyword_is_still_an_argument() -> None:
    tools = {"set_type": {"type": "object", "properties": {"type": {"type": "string"}}}}
    text = '{"name": "set_type", "arguments": {"type": "csv"}}'
    assert parse_tool_calls(text, tools).calls == [("set_type", {"type": "csv"})]


def test_a_reply_never_carries_the_same_call_twice() -> None:
    block = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
    other = '<tool_call>\n{"name": "read_file", "arguments": {"path": "b"}}\n</tool_call>'
    parsed = parse_tool_calls("\n".join([block, other, block, block]), REAL)
    assert parsed.calls == [("read_file", {"path": "a"}), ("read_file", {"path": "b"})]


def test_parallel_false_keeps_only_the_first_call() -> None:
    text = (
        '{"name": "list_files", "arguments": {}}\n{"name": "read_file", "arguments": {"path": "a"}}'
    )
    assert parse_tool_calls(text, REAL, parallel=False).calls == [("list_files", {})]
    assert len(parse_tool_calls(text, REAL, parallel=True).calls) == 2


# What the packaged Qwen2.5-Coder-1.5B writes under tool_choice auto, often.
WRAPPED = '{{"name": "read_file", "arguments": {"path": "notes.txt"}}}}'


@pytest.mark.parametrize(
    "text",
    [
        WRAPPED,
        '{{"name": "read_file", "arguments": {"path": "notes.txt"}}}',
        '{ {"name": "read_file", "arguments": {"path": "notes.txt"}} }',
        f"<tool_call>\n{WRAPPED}\n</tool_call>",
        f"```json\n{WRAPPED}\n```",
        '{{"name": "read_file", "arguments": {"path": "notes.txt"}',  # left open at the end
    ],
)
def test_extra_braces_around_a_call_belong_to_the_call(text: str) -> None:
    parsed = parse_tool_calls(text, REAL)
    assert parsed.calls == [("read_file", {"path": "notes.txt"})]
    assert parsed.content is None
    before = parse_tool_calls(f"Let me read it.\n{text}", REAL)
    assert before.calls == parsed.calls and before.content == "Let me read it."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"name": "read_file", "arguments": {"path": 7}}', "7 is not of type 'string'"),
        ('{"name": "read_file", "arguments": {}}', "'path' is a required property"),
        ('{"name": "read_file", "arguments": ["a.txt"]}', "not a JSON object"),
        (SCHEMA_ECHOES["arguments that are the tool's schema"], "JSON Schema keywords"),
        (SCHEMA_ECHOES["a copied definition without the wrapper"], "a tool definition"),
    ],
)
def test_a_refused_call_is_reported_with_its_reason(text: str, reason: str) -> None:
    parsed = parse_tool_calls(f"Let me see. {text}", REAL)
    assert parsed.calls == [] and parsed.content == f"Let me see. {text}"
    (refused,) = parsed.refused
    assert refused.name in REAL and reason in refused.reason
    raw = json.loads(text)
    assert json.loads(refused.arguments) == raw.get("arguments", raw.get("parameters"))


def test_text_that_names_no_offered_tool_is_not_a_refused_call() -> None:
    parsed = parse_tool_calls('{"name": "rm_rf", "arguments": {}} and {"name": "Alice"}', REAL)
    assert parsed.calls == [] and parsed.refused == []
