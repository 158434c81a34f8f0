"""The one definition of what looks like a tool call: every form the parser accepts is found,
with spans that cover the call's whole text, and nothing else is."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from serve_local.callshape import call_spans
from serve_local.toolcalls import parse_tool_calls
from tests.test_toolcalls import FORMS, OPEN, calls

prose = st.text(alphabet=st.characters(exclude_characters="{}[]<>`"), max_size=40)


def stripped(text: str, spans: list[Any]) -> str:
    kept, at = [], 0
    for span in spans:
        kept.append(text[at : max(at, span.start)])
        at = max(at, span.end)
    return "".join(kept) + text[at:]


@given(calls, st.sampled_from(sorted(FORMS)), prose, prose)
def test_every_form_the_parser_accepts_is_found_whole(
    cs: list[tuple[str, dict[str, Any]]], form: str, before: str, after: str
) -> None:
    text = f"{before}\n{FORMS[form](cs)}\n{after}"
    spans = call_spans(text)
    assert [s.name for s in spans] == [name for name, _ in cs]
    # Taking the spans out leaves the prose around the calls, and nothing of the calls.
    assert stripped(text, spans).split() == f"{before}\n\n{after}".split()
    assert parse_tool_calls(text, OPEN).calls == cs


@given(st.text(max_size=200))
def test_every_call_the_parser_makes_is_a_span(text: str) -> None:
    names = [s.name for s in call_spans(text)]
    for name, _ in parse_tool_calls(text, OPEN).calls:
        assert name in names


def test_names_select_the_tools_asked_about() -> None:
    text = (
        'I will call {"arguments": {"answer": "3"}, "name": "submit"} and '
        '```json\n{"name": "read_file", "arguments": {"path": 7}}\n```, not {"name": "Alice"}.'
    )
    assert [s.name for s in call_spans(text)] == ["submit", "read_file", "Alice"]
    (span,) = call_spans(text, {"read_file"})
    assert text[span.start : span.end].startswith("```json") and text[span.end - 3 :].startswith(
        "```"
    )
    assert [s.name for s in call_spans(text, {"submit", "list_files"})] == ["submit"]


def test_json_that_names_nothing_is_not_a_call() -> None:
    for text in ['{"retries": 3}', "[1, 2]", '{"name": 7}', json.dumps({"function": {}})]:
        assert call_spans(text) == [], text
