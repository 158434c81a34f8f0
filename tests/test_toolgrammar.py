"""The call grammar over the real Qwen vocabulary: what it starts on, what it forbids, and a
property test over random tool schemas (every constrained call parses and validates)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from harness.tools import default_tools
from serve_local.backends.llama import llama_vocabulary
from serve_local.models import QWEN_CODER, resolve
from serve_local.toolcalls import ToolSchemas, parse_tool_calls
from serve_local.toolgrammar import (
    CallConstraint,
    CallGrammar,
    CallPolicy,
    may_start_call,
    trigger_at,
)

REAL = {t.name: t.parameters for t in default_tools()}


@pytest.fixture(scope="module")
def grammar() -> Iterator[CallGrammar]:
    import llama_cpp

    llm = llama_cpp.Llama(str(resolve(QWEN_CODER).path), vocab_only=True, verbose=False)
    yield CallGrammar(llama_vocabulary(llm))


def feed(constraint: CallConstraint, grammar: CallGrammar, text: str) -> tuple[bool, str]:
    """Feed ``text`` token by token as a model would; (whether it asked to stop, text fed)."""
    tokens = grammar.tokenizer.tokenize_str(text, parse_special=True)
    so_far = ""
    for token in tokens:
        so_far += grammar.tokenizer.decode_str([token])
        if constraint.observe(token, so_far):
            return True, so_far
    return False, so_far


def allowed_text(
    constraint: CallConstraint, grammar: CallGrammar, candidates: list[str]
) -> set[str]:
    """Which of ``candidates`` (single tokens) the mask allows next."""
    mask = constraint.allowed()
    assert mask is not None
    out = set()
    for text in candidates:
        (token,) = grammar.tokenizer.tokenize_str(text, parse_special=True)
        if mask[token]:
            out.add(text)
    return out


def test_the_triggers_of_auto() -> None:
    assert trigger_at("I will check the files.") is None
    assert trigger_at("  \n") is None
    assert trigger_at("``") is None  # a fence might still become a call: not yet
    assert trigger_at('\n{"name"') == 1
    assert trigger_at('```json\n{"name": "re') == 0
    assert trigger_at("```python\nprint(1)") is None
    assert trigger_at("Let me look.\n<tool_call>") == len("Let me look.\n")
    assert trigger_at("The answer is {x}") is None  # a brace later in prose is not a call
    assert trigger_at('{"answer": "errors.log"}') is None  # an answer given as JSON
    assert trigger_at('{{"name"') == 0  # extra braces around a call belong to it
    assert trigger_at(' { {\n"name"') == 1


def test_what_may_still_become_a_call() -> None:
    for text in [
        "",
        " \n",
        "`",
        "``",
        "```",
        "```js",
        "```json\n",
        "{",
        '{"',
        '{"na',
        '{ "name',
        "{{",
    ]:
        assert may_start_call(text), text
    for text in ["I", '{"answer', "```python", "`x", "{}", '```json\n{"a']:
        assert not may_start_call(text), text


def test_prose_is_never_constrained(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    stop, _ = feed(constraint, grammar, "errors.log mentions a timeout {worker 7}.")
    assert not stop and not constraint.active and constraint.allowed() is None


def test_under_auto_an_offered_name_puts_the_call_under_the_grammar(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    feed(constraint, grammar, '{"name": "read_fi')
    assert not constraint.active  # the name is the model's own until it is written whole
    feed(constraint, grammar, '{"name": "read_file", "arguments": {"')
    assert constraint.active
    assert allowed_text(constraint, grammar, ["path", "name", "type"]) == {"path"}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "solve_quadratic", "arguments": {"a": 3}}',
        '```json\n{\n  "name": "CalculateIntegral",\n  "arguments": {}\n}\n```',
        '<tool_call>\n{"name": "find_route", "arguments": {"to": "Boston"}}\n</tool_call>',
    ],
)
def test_under_auto_a_name_not_offered_is_not_made_a_call_of_one_that_is(
    grammar: CallGrammar, text: str
) -> None:
    """A model reaching for a tool that is not offered (BFCL's irrelevance items) has made no
    call: the grammar must not turn it into a call of an offered tool."""
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    stop, _ = feed(constraint, grammar, text)
    assert not stop and constraint.abandoned and constraint.allowed() is None
    assert parse_tool_calls(text, REAL).calls == []


def test_under_required_only_offered_names_may_be_written(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "required", True))
    feed(constraint, grammar, '{"name": "')
    assert allowed_text(constraint, grammar, ["read", "list", "delete", "scan", "rm", "type"]) == {
        "read",
        "list",
        "delete",
        "scan",
    }


def test_a_schema_cannot_be_written_as_arguments(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    feed(constraint, grammar, '<tool_call>\n{"name": "list_files", "arguments": {')
    # list_files takes no arguments (additionalProperties: false): only the object's end.
    assert allowed_text(constraint, grammar, ["}", '"', "type"]) == {"}"}


def test_required_forbids_ending_before_a_call(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "required", True))
    mask = constraint.allowed()
    assert mask is not None
    eos = grammar.tokenizer.eos_tokens
    assert not any(mask[t] for t in eos)
    (tag,) = grammar.tokenizer.tokenize_str("<tool_call>", parse_special=True)
    assert mask[tag]
    assert not allowed_text(constraint, grammar, ["The", "I", "Sure"])


def test_a_schema_the_grammar_cannot_compile_constrains_less_and_says_why(
    grammar: CallGrammar,
) -> None:
    """A pointer to nothing (the server refuses it earlier; a caller of the grammar may not):
    that tool takes any object, the others stay constrained, and the constraint says so."""
    tools = {
        "broken": {"type": "object", "properties": {"a": {"$ref": "#/nope"}}},
        "read_file": REAL["read_file"],
    }
    constraint = grammar.constraint(CallPolicy(tools, "required", False))
    assert [(n.tool, n.keyword) for n in constraint.loosened] == [("broken", "schema")]
    assert "/nope" in constraint.loosened[0].detail
    stopped, _ = feed(constraint, grammar, '{"name": "broken", "arguments": {"b": [1]}}')
    assert stopped
    other = grammar.constraint(CallPolicy(tools, "read_file", False))
    feed(other, grammar, '{"name": "read_file", "arguments": {"')
    assert allowed_text(other, grammar, ["path", "x"]) == {"path"}


class FlightInfo(BaseModel):
    flight_number: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class Cabin(StrEnum):
    economy = "economy"
    business = "business"


class Booking(BaseModel):
    flights: list[FlightInfo]
    cabin: Cabin
    note: str | None = None


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def test_pydantic_defs_and_refs_compile_and_constrain(grammar: CallGrammar) -> None:
    """``$defs``/``$ref`` as pydantic writes them (nested, recursive): the pointers resolve
    inside the call grammar, and what they point at is enforced."""
    tools = {"book": Booking.model_json_schema(), "tree": Tree.model_json_schema()}
    constraint = grammar.constraint(CallPolicy(tools, "required", False))
    assert constraint.loosened == []
    call = {"name": "tree", "arguments": {"name": "a", "children": [{"name": "b"}]}}
    stopped, text = feed(constraint, grammar, json.dumps(call))
    assert stopped and parse_tool_calls(text, tools).calls == [("tree", call["arguments"])]

    booking = grammar.constraint(CallPolicy(tools, "book", False))
    feed(booking, grammar, '{"name": "book", "arguments": {"flights": [], "cabin": "')
    assert allowed_text(booking, grammar, ["eco", "first", "x", "business"]) == {"eco", "business"}
    dated = grammar.constraint(CallPolicy(tools, "book", False))
    head = '{"name": "book", "arguments": {"flights": [{"flight_number": "A1", "date": "'
    feed(dated, grammar, head)
    assert allowed_text(dated, grammar, ["2", "x"]) == {"2"}  # the $ref'd pattern holds


def test_a_forced_call_of_a_tool_without_arguments_takes_empty_arguments(
    grammar: CallGrammar,
) -> None:
    """``{"properties": {}, "type": "object"}``, as tau2 and pydantic write a tool without
    arguments: no key fits, so the model cannot fill it with the schema's own keywords."""
    tools = {"check_status_bar": {"properties": {}, "title": "parameters", "type": "object"}}
    constraint = grammar.constraint(CallPolicy(tools, "check_status_bar", False))
    feed(constraint, grammar, '{"name": "check_status_bar", "arguments": {')
    assert allowed_text(constraint, grammar, ["}", '"', "properties"]) == {"}"}


def test_objects_take_only_their_declared_keys_unless_they_say_otherwise(
    grammar: CallGrammar,
) -> None:
    tools = {
        "t": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "meta": {"type": "object"}},
            "additionalProperties": False,
        },
        "u": {"type": "object", "properties": {"a": {"type": "string"}}},
        "v": {"type": "object", "additionalProperties": {"type": "integer"}},
    }
    closed = grammar.constraint(CallPolicy(tools, "u", False))
    feed(closed, grammar, '{"name": "u", "arguments": {"')
    assert allowed_text(closed, grammar, ["a", "b", "type"]) == {"a"}
    free = grammar.constraint(CallPolicy(tools, "t", False))
    feed(free, grammar, '{"name": "t", "arguments": {"meta": {"')
    assert allowed_text(free, grammar, ["a", "b"]) == {"a", "b"}  # a free-form map stays free
    mapping = grammar.constraint(CallPolicy(tools, "v", False))
    feed(mapping, grammar, '{"name": "v", "arguments": {"')
    assert allowed_text(mapping, grammar, ["a", "b"]) == {"a", "b"}


def test_a_pattern_the_regex_engine_refuses_is_loosened_and_named(grammar: CallGrammar) -> None:
    """Look-around is beyond the grammar's regular expressions: that pattern alone is dropped,
    the other keywords hold, and the call still parses against what the grammar enforced."""
    tools = {
        "code": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^(?=.*\\d)[a-z0-9]+$"},
                "kind": {"enum": ["a", "b"]},
            },
            "required": ["code", "kind"],
        }
    }
    constraint = grammar.constraint(CallPolicy(tools, "code", False))
    assert [(n.tool, n.keyword) for n in constraint.loosened] == [("code", "pattern")]
    feed(constraint, grammar, '{"name": "code", "arguments": {"code": "abc", "kind": "')
    assert allowed_text(constraint, grammar, ["a", "c"]) == {"a"}
    text = '{"name": "code", "arguments": {"code": "abc", "kind": "a"}}'
    assert parse_tool_calls(text, ToolSchemas(constraint.schemas)).calls == [
        ("code", {"code": "abc", "kind": "a"})
    ]


def test_a_named_choice_allows_that_tool_only(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "read_file", True))
    feed(constraint, grammar, '{"name": "')
    assert allowed_text(constraint, grammar, ["read", "list", "delete"]) == {"read"}


def test_parallel_false_ends_the_reply_after_the_first_call(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", False))
    call = '<tool_call>\n{"name": "list_files", "arguments": {}}\n</tool_call>'
    stop, fed = feed(constraint, grammar, call + "\n" + call.replace("list_files", "scan_archive"))
    assert stop and fed == call


def test_parallel_true_ends_the_reply_at_a_repeated_call(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    first = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
    second = first.replace('"a"', '"b"')
    stop, fed = feed(constraint, grammar, "\n".join([first, second, first, second]))
    # It ends where the repeat's arguments close, before its closing tag.
    repeat = first.removesuffix("\n</tool_call>")
    assert stop and fed.startswith("\n".join([first, second, repeat]))
    assert len(fed) < len("\n".join([first, second, first]))
    assert parse_tool_calls(fed, REAL).calls == [
        ("read_file", {"path": "a"}),
        ("read_file", {"path": "b"}),
    ]


def test_parallel_calls_may_each_have_their_own_fence(grammar: CallGrammar) -> None:
    """Qwen-Coder writes a second call as a second json fence; the parser takes both, so the
    grammar must not cut the reply after the first."""
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    first = '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```'
    second = first.replace('"a"', '"b"')
    stop, fed = feed(constraint, grammar, first + "\n" + second)
    assert not stop and not constraint.abandoned and fed == first + "\n" + second
    assert parse_tool_calls(fed, REAL).calls == [
        ("read_file", {"path": "a"}),
        ("read_file", {"path": "b"}),
    ]


def test_a_call_inside_extra_braces_stays_constrained(grammar: CallGrammar) -> None:
    """Qwen-Coder's ``{{"name": ...}}}}``: the trigger fires on the outer brace, the grammar
    takes the wrapper, and the call must close it (balanced) before the reply may end."""
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    call = '{{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    stop, fed = feed(constraint, grammar, call)
    assert constraint.active and not constraint.abandoned and not stop
    mask = constraint.allowed()
    assert mask is not None and not any(mask[t] for t in grammar.tokenizer.eos_tokens)
    assert "}" in allowed_text(constraint, grammar, ["}", "The"])
    feed_more(constraint, grammar, fed, "}")
    assert not constraint.abandoned
    mask = constraint.allowed()
    assert mask is not None and any(mask[t] for t in grammar.tokenizer.eos_tokens)
    assert parse_tool_calls(fed + "}", REAL).calls == [("read_file", {"path": "notes.txt"})]


def feed_more(constraint: CallConstraint, grammar: CallGrammar, so_far: str, text: str) -> None:
    for token in grammar.tokenizer.tokenize_str(text, parse_special=True):
        so_far += grammar.tokenizer.decode_str([token])
        constraint.observe(token, so_far)


PRETTY_CALL = {"name": "read_file", "arguments": {"path": "logs/errors.log"}}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(PRETTY_CALL, indent=2),
        json.dumps(PRETTY_CALL, indent=4),
        json.dumps(PRETTY_CALL, indent="\t"),
        "```json\n" + json.dumps(PRETTY_CALL, indent=2) + "\n```",
        "<tool_call>\n" + json.dumps(PRETTY_CALL, indent=2) + "\n</tool_call>",
        '{ "name" : "read_file" , "arguments" : { "path" : "logs/errors.log" } }',
    ],
)
def test_a_pretty_printed_call_stays_under_the_grammar(grammar: CallGrammar, text: str) -> None:
    """A call written over several indented lines starts the grammar and stays in it to the
    end: the constraint is never abandoned, and the reply ends with the call."""
    constraint = grammar.constraint(CallPolicy(REAL, "auto", False))
    stop, fed = feed(constraint, grammar, text)
    assert constraint.active and not constraint.abandoned
    mask = constraint.allowed()
    assert stop or (mask is not None and any(mask[t] for t in grammar.tokenizer.eos_tokens))
    assert parse_tool_calls(fed, REAL).calls == [("read_file", {"path": "logs/errors.log"})]


def test_whitespace_inside_a_call_is_bounded(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "required", True))
    _, fed = feed(constraint, grammar, '{\n  "name": "list_files",')
    assert not constraint.abandoned
    fed_blanks = 0
    (space,) = grammar.tokenizer.tokenize_str(" ", parse_special=True)
    while constraint.allowed() is not None and constraint.allowed()[space]:  # type: ignore[index]
        fed += " "
        constraint.observe(space, fed)
        fed_blanks += 1
        assert fed_blanks < 100, "the grammar allows blanks without end"
    assert fed_blanks > 1


def test_an_answer_given_as_json_is_not_constrained(grammar: CallGrammar) -> None:
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    stop, _ = feed(constraint, grammar, '{"answer": "errors.log mentions a timeout"}')
    assert not stop and not constraint.active and constraint.allowed() is None


def test_a_bare_call_repeated_inside_one_token_still_ends_the_reply(grammar: CallGrammar) -> None:
    """Token boundaries may straddle the end of a call and the separator ("}}\n"): the
    repeat is still caught where it closes."""
    constraint = grammar.constraint(CallPolicy(REAL, "auto", True))
    a = '{"name": "read_file", "arguments": {"path": "a"}}'
    b = a.replace('"a"', '"b"')
    stop, fed = feed(constraint, grammar, "\n".join([a, b, b, a]))
    assert stop and fed.startswith("\n".join([a, b, b[:-1]]))


# Random tool schemas: the kinds of argument a tool declares in practice.
leaf = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "string", "enum": ["a", "bb", "c c"]},
        {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        {"type": "integer", "minimum": 0, "maximum": 99},
    ]
)
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


@st.composite
def objects(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    value = leaf if depth else st.one_of(leaf, objects(depth=1))
    props = draw(st.dictionaries(keys, value, max_size=3))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    names = sorted(props)
    schema["required"] = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


tool_sets = st.dictionaries(
    st.sampled_from(["alpha", "beta", "gamma_tool", "d"]), objects(), min_size=1, max_size=3
)


CLOSERS = ('"', "}", "]")


def walk(constraint: CallConstraint, grammar: CallGrammar, rng: random.Random) -> str:
    """A random path through the grammar to its end, preferring one-character tokens and, a
    third of the time, whatever closes a string, an object or an array, so every path ends."""
    tok = grammar.tokenizer
    short = [t for t in range(grammar.n_vocab) if len(tok.decode_bytes([t])) == 1]
    closers = [t for t in short if tok.decode_str([t]) in CLOSERS]
    eos = set(tok.eos_tokens)
    text = ""
    for _ in range(5000):
        mask = constraint.allowed()
        assert mask is not None
        if any(mask[t] for t in eos) and rng.random() < 0.5:
            return text
        closing = [t for t in closers if mask[t]]
        if closing and rng.random() < 1 / 3:
            choices = closing
        else:
            choices = [t for t in short if mask[t]] or [
                t for t in range(grammar.n_vocab) if mask[t]
            ]
            choices = [t for t in choices if t not in eos] or choices
        token = rng.choice(choices)
        if token in eos:
            return text
        text += tok.decode_str([token])
        if constraint.observe(token, text):
            return text
    raise AssertionError(f"the grammar never let this call end: {text[-200:]!r}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tools=tool_sets, parallel=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_every_constrained_call_parses_and_validates(
    grammar: CallGrammar, tools: dict[str, dict[str, Any]], parallel: bool, seed: int
) -> None:
    constraint = grammar.constraint(CallPolicy(tools, "required", parallel))
    text = walk(constraint, grammar, random.Random(seed))
    parsed = parse_tool_calls(text, tools, parallel=parallel)
    assert parsed.calls, f"no call in {text!r}"
    assert parsed.content is None, text
    if not parallel:
        assert len(parsed.calls) == 1
    for name, args in parsed.calls:
        jsonschema.validate(args, tools[name])
    assert len({json.dumps(c, sort_keys=True) for c in parsed.calls}) == len(parsed.calls)
