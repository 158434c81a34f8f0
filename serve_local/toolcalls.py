"""Find tool calls in the text a small model generates.

Small models emit calls in many shapes: Qwen's ``<tool_call>{...}</tool_call>`` blocks (one or
several), a bare JSON object, a list of objects, several objects one per line, JSON inside a
fenced code block, ``parameters`` instead of ``arguments``, arguments given as a JSON string
(sometimes encoded twice), an object a closing brace or two short at the very end. A call
naming a tool the request did not offer, or JSON that does not parse, is left as text: a bogus
call is worse than an honest answer the harness can score.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[a-zA-Z]*\s*\n?(?P<body>.*?)\s*```", re.DOTALL)
_DECODER = json.JSONDecoder()
_SEPARATORS = " \t\r\n,;"


@dataclass
class Parsed:
    content: str | None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _arguments(value: Any) -> dict[str, Any] | None:
    """Arguments as an object; a JSON string (even encoded twice) is decoded."""
    for _ in range(3):
        if isinstance(value, dict):
            return value
        if value is None:
            return {}
        if not isinstance(value, str):
            return None
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _as_call(value: Any, names: set[str]) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's own shape, echoed back
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    raw = value["arguments"] if "arguments" in value else value.get("parameters")
    args = _arguments(raw)
    return None if args is None else (name, args)


def _calls_in_value(value: Any, names: set[str]) -> list[tuple[str, dict[str, Any]]] | None:
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, names) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


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


def _decode_all(body: str) -> list[Any] | None:
    """Every JSON value in ``body`` separated only by whitespace or commas, else None."""
    values: list[Any] = []
    i = 0
    while True:
        while i < len(body) and body[i] in _SEPARATORS:
            i += 1
        if i == len(body):
            return values or None
        try:
            value, i = _DECODER.raw_decode(body, i)
        except json.JSONDecodeError:
            try:
                value, i = _decode_unclosed(body[i:]), len(body)
            except json.JSONDecodeError:
                return None
        values.append(value)


def _calls_in_block(body: str, names: set[str]) -> list[tuple[str, dict[str, Any]]] | None:
    values = _decode_all(body)
    if values is None:
        return None
    calls: list[tuple[str, dict[str, Any]]] = []
    for value in values:
        found = _calls_in_value(value, names)
        if found is None:
            return None
        calls.extend(found)
    return calls


def _take_blocks(
    pattern: re.Pattern[str], text: str, names: set[str], calls: list[tuple[str, dict[str, Any]]]
) -> str:
    def replace(match: re.Match[str]) -> str:
        found = _calls_in_block(match.group("body"), names)
        if found is None:
            return match.group(0)
        calls.extend(found)
        return ""

    return pattern.sub(replace, text)


def _take_bare_json(text: str, names: set[str], calls: list[tuple[str, dict[str, Any]]]) -> str:
    kept: list[str] = []
    i = start = 0
    while i < len(text):
        if text[i] not in "{[":
            i += 1
            continue
        try:
            value, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            try:
                value, end = _decode_unclosed(text[i:]), len(text)
            except json.JSONDecodeError:
                i += 1
                continue
        found = _calls_in_value(value, names)
        if found is not None:
            kept.append(text[start:i])
            calls.extend(found)
            start = end
        i = end
    kept.append(text[start:])
    return "".join(kept)


def parse_tool_calls(text: str, names: set[str] | list[str]) -> Parsed:
    """Split generated ``text`` into tool calls for the offered ``names`` and the rest."""
    offered = set(names)
    if not offered:
        return Parsed(text.strip() or None)
    calls: list[tuple[str, dict[str, Any]]] = []
    rest = _take_blocks(_TAGGED, text, offered, calls)
    rest = _take_blocks(_FENCED, rest, offered, calls)
    rest = _take_bare_json(rest, offered, calls)
    if not calls:
        return Parsed(text.strip() or None)
    return Parsed(rest.strip() or None, calls)
