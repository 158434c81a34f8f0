"""What looks like a tool call in a model's text: the one definition the parser
(:mod:`serve_local.toolcalls`), the call grammar's trigger (:mod:`serve_local.toolgrammar`) and the
eval records (``evals.run.recorder``) share.

A call is a JSON object naming a tool, ``{"name": ..., "arguments": ...}`` (``parameters`` for
``arguments``, or OpenAI's ``{"type": "function", "function": {...}}``), written in any of the
shapes small models use: bare, as a list, several one per line, in a ``<tool_call>`` block or in
a fenced code block. Extra braces around a call (``{{"name": ...}}}}``, which Qwen-Coder often
writes) belong to the call. An object left open at the very end of the text, up to three closing
braces short, counts too.

Shape only: whether a call is valid (an offered name, arguments its schema accepts) is the
parser's judgement. :func:`call_spans` is the public question "where are the calls in this
text"; :func:`scan_calls` also answers it for a reply still being generated, where a call may
not have closed yet.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from serve_local.nesting import MAX_CALL_DEPTH, value_deeper_than

__all__ = [
    "CALL_HEAD",
    "CALL_HEAD_SO_FAR",
    "TAG_CLOSE",
    "TAG_OPEN",
    "CallGroup",
    "CallScan",
    "CallSpan",
    "call_spans",
    "scan_calls",
]

TAG_OPEN, TAG_CLOSE = "<tool_call>", "</tool_call>"

# The start of a bare call as it is being written: wrapper braces, then an object whose first
# key is "name". Prefix forms, for text that may still grow into one.
CALL_HEAD = re.compile(r'(?:\{\s*){1,4}"name"')
CALL_HEAD_SO_FAR = re.compile(r'(?:\{\s*){1,4}(?:"(?:n(?:a(?:m(?:e)?)?)?)?)?')

_SEPARATORS = " \t\r\n,;"
_WRAPPER = re.compile(r"\{\s*(?=\{)")  # one extra brace opening a call
_MAX_WRAPPERS = 3
_CLOSER = re.compile(r"\s*\}")
_FENCE_OPEN = re.compile(r"```[a-zA-Z]*\s*\n?")
_CANDIDATE = re.compile(r"[<`{\[]")
_DECODER = json.JSONDecoder()
_LITERALS = ("true", "false", "null")

Mode = Literal["prefix", "complete", "region"]


@dataclass(frozen=True)
class CallSpan:
    """One call-shaped object: where it sits in the text (``text[start:end]``, its block's tag,
    fence and wrapper braces included), the name it gives, and the object as written.

    Calls written as one JSON list share the list's span."""

    start: int
    end: int
    name: str
    value: dict[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True)
class CallGroup:
    """Calls written together (one tag block, one fence, one bare value), judged together."""

    start: int
    end: int
    calls: list[CallSpan]


@dataclass(frozen=True)
class CallScan:
    """The call groups of a text, and how far it is settled: in a reply still being generated,
    the text from ``settled`` on may yet turn into a call (or grow the last one)."""

    groups: list[CallGroup]
    settled: int


def call_spans(text: str, names: Container[str] | None = None) -> list[CallSpan]:
    """Every call-shaped object in ``text`` the parser would consider, in order; with ``names``,
    only those naming one of them."""
    return [
        span
        for group in scan_calls(text).groups
        for span in group.calls
        if names is None or span.name in names
    ]


def scan_calls(text: str, complete: bool = True) -> CallScan:
    """The call groups of ``text``; with ``complete`` false, ``text`` is a reply still being
    generated and the scan stops where what follows could still change what it finds."""
    return _scan(text, "complete" if complete else "prefix")


def _called(item: Any) -> dict[str, Any] | None:
    """The object naming the tool, if ``item`` is call-shaped."""
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    named = function if isinstance(function, dict) else item
    return item if isinstance(named.get("name"), str) else None


def _group(start: int, end: int, values: list[tuple[int, int, Any]]) -> CallGroup | None:
    spans: list[CallSpan] = []
    for _, _, value in values:
        items = value if isinstance(value, list) else [value]
        objects = [_called(item) for item in items]
        if not objects or any(o is None for o in objects):
            return None
        for o in objects:
            assert o is not None
            function = o.get("function")
            name = (function if isinstance(function, dict) else o)["name"]
            spans.append(CallSpan(start, end, name, o))
    if not spans:
        return None
    if len(values) > 1:  # one span per value: split the block at the values' ends
        bounds = [start] + [v_end for _, v_end, _ in values[:-1]] + [end]
        per_value = [len(v) if isinstance(v, list) else 1 for _, _, v in values]
        split, k = [], 0
        for n, (lo, hi) in zip(per_value, pairwise(bounds), strict=True):
            split += [CallSpan(lo, hi, s.name, s.value) for s in spans[k : k + n]]
            k += n
        spans = split
    return CallGroup(start, end, spans)


def _may_continue(text: str, i: int) -> bool:
    """Whether the value opening at ``text[i]`` (``{`` or ``[``) could still become JSON."""
    rest = text[i + 1 :].lstrip()
    if not rest:
        return True
    if text[i] == "{":
        return rest[0] in '"}'
    return rest[0] in '{["-0123456789]' or any(
        word.startswith(rest[: len(word)]) for word in _LITERALS
    )


def _decode_unclosed(text: str) -> Any:
    """A JSON object that runs to the end of ``text`` but lacks up to three closing braces.

    Small models often stop one ``}`` short of a call; anything else still fails to decode.
    """
    candidate = text.rstrip()
    for missing in range(1, 4):
        try:
            return json.loads(candidate + "}" * missing)
        except json.JSONDecodeError:
            continue
    raise json.JSONDecodeError("unbalanced", text, 0)


_Open = Literal["open"]
OPEN: _Open = "open"


@dataclass(frozen=True)
class _Value:
    start: int  # the first wrapper brace, or the value itself
    value_start: int
    value_end: int
    end: int  # past the wrapper's closing braces
    value: Any


def _value_at(text: str, i: int, mode: Mode) -> _Value | _Open | None:
    """The JSON value at ``text[i]`` with any wrapper braces around it; None when there is none,
    OPEN when the text so far cannot tell (``prefix`` mode only)."""
    j, wrappers = i, 0
    while wrappers < _MAX_WRAPPERS and (wrap := _WRAPPER.match(text, j)) is not None:
        j, wrappers = wrap.end(), wrappers + 1
    if j < len(text) and text[j] in "[{" and value_deeper_than(text, j, MAX_CALL_DEPTH):
        return None  # too deep to be a call: text (the decoder would recurse past its limit)
    try:
        value, end = _DECODER.raw_decode(text, j)
    except json.JSONDecodeError:
        if mode == "prefix":
            return OPEN if _may_continue(text, j) else None
        if mode == "region" or text[j] != "{":
            return None
        try:
            value, end = _decode_unclosed(text[j:]), len(text)
        except json.JSONDecodeError:
            return None
    value_end, closers = end, 0
    while wrappers and closers < wrappers + 2 and (close := _CLOSER.match(text, end)) is not None:
        end, closers = close.end(), closers + 1
    if mode == "prefix" and wrappers and closers < wrappers + 2 and not text[end:].strip():
        return OPEN  # more closing braces of the wrapper may follow
    return _Value(i, j, value_end, end, value)


def _values(body: str) -> list[_Value] | None:
    """Every JSON value in ``body`` separated only by whitespace or commas, else None."""
    values: list[_Value] = []
    i = 0
    while True:
        while i < len(body) and body[i] in _SEPARATORS:
            i += 1
        if i == len(body):
            return values or None
        found = _value_at(body, i, "complete")
        if not isinstance(found, _Value):
            return None
        values.append(found)
        i = found.end


def _block(text: str, start: int, body_at: int, body_end: int, end: int) -> CallGroup | None:
    values = _values(text[body_at:body_end])
    if values is None:
        return None
    shifted = [(v.value_start + body_at, v.value_end + body_at, v.value) for v in values]
    return _group(start, end, shifted)


def _delimited(
    text: str, i: int, mode: Mode, closing: str, body_at: int
) -> tuple[list[CallGroup], int] | _Open:
    """The block opening at ``text[i]`` and running to ``closing`` (or to the end of a finished
    text): its call group, or the groups inside a block that is not one; and the index past it.
    OPEN while it has not closed."""
    close = text.find(closing, body_at)
    if close < 0 and mode == "prefix":
        return OPEN
    body_end, end = (close, close + len(closing)) if close >= 0 else (len(text), len(text))
    group = _block(text, i, body_at, body_end, end)
    if group is not None:
        return [group], end
    # Not a call block: what it holds is still scanned (a bare call inside a code fence).
    inner = _scan(text[body_at:body_end], "complete" if close < 0 else "region")
    return [_shift(g, body_at) for g in inner.groups], end


def _shift(group: CallGroup, by: int) -> CallGroup:
    return CallGroup(
        group.start + by,
        group.end + by,
        [CallSpan(s.start + by, s.end + by, s.name, s.value) for s in group.calls],
    )


def _scan(text: str, mode: Mode) -> CallScan:
    groups: list[CallGroup] = []
    i = 0
    while (candidate := _CANDIDATE.search(text, i)) is not None:
        i = candidate.start()
        found: tuple[list[CallGroup], int] | int | _Open
        if text.startswith(TAG_OPEN, i):
            found = _delimited(text, i, mode, TAG_CLOSE, i + len(TAG_OPEN))
        elif (fence := _FENCE_OPEN.match(text, i)) is not None:
            found = _delimited(text, i, mode, "```", fence.end())
        elif text[i] in "<`":
            partial = text[i:] in (TAG_OPEN[: len(text) - i], "``"[: len(text) - i])
            found = OPEN if mode == "prefix" and partial else i + 1
        else:
            found = _bare(text, i, mode)
        if found == OPEN:
            return CallScan(groups, i)
        if isinstance(found, tuple):
            groups += found[0]
            i = found[1]
        else:
            assert isinstance(found, int)
            i = found
    return CallScan(groups, len(text))


def _bare(text: str, i: int, mode: Mode) -> tuple[list[CallGroup], int] | int | _Open:
    found = _value_at(text, i, mode)
    if found == OPEN:
        return OPEN
    if not isinstance(found, _Value):
        return i + 1
    group = _group(found.start, found.end, [(found.value_start, found.value_end, found.value)])
    if group is not None:
        return [group], group.end
    # Not a call: an object or list is skipped whole; a wrapper brace is just a brace.
    return found.value_end if found.value_start == i else i + 1
