"""Find tool calls in the text a small model generates, and refuse what is not a call.

Small models emit calls in many shapes: Qwen's ``<tool_call>{...}</tool_call>`` blocks (one or
several), a bare JSON object, a list of objects, several objects one per line, JSON inside a
fenced code block, extra braces around the call, ``parameters`` instead of ``arguments``,
arguments given as a JSON string (sometimes encoded twice), an object a closing brace or two
short at the very end. Where those shapes sit in a text is :mod:`serve_local.callshape`'s to say;
this module judges each.

What is never a call, whatever its shape: a name the request did not offer, JSON that does not
parse, a tool *definition* copied back (it carries ``description`` or a schema as
``parameters``), arguments that are a JSON Schema or hold schema keywords the tool does not
declare, and arguments that fail the tool's own schema (checked with ``jsonschema``). Such text
is left as text: a bogus call is worse than an honest answer the harness can score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from serve_local.callshape import CallScan, scan_calls

# Keys that make an object a JSON Schema rather than a tool's arguments, unless the tool
# itself declares a property of that name.
SCHEMA_KEYWORDS = frozenset(
    {
        "$schema",
        "$ref",
        "$defs",
        "definitions",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
    }
)

Call = tuple[str, dict[str, Any]]


@dataclass
class Parsed:
    content: str | None
    calls: list[Call] = field(default_factory=list)


class ToolSchemas:
    """The offered tools' argument schemas, each compiled once into a ``jsonschema`` validator."""

    def __init__(self, tools: Mapping[str, Mapping[str, Any]]) -> None:
        self.schemas = {name: dict(schema) for name, schema in tools.items()}
        self._validators = {
            name: validators.validator_for(schema)(schema) for name, schema in self.schemas.items()
        }

    @staticmethod
    def check(schema: Mapping[str, Any]) -> str | None:
        """Why ``schema`` is not a usable JSON Schema, or None when it is."""
        try:
            validators.validator_for(schema).check_schema(dict(schema))
        except SchemaError as exc:
            return str(exc.message)
        return None

    def __contains__(self, name: object) -> bool:
        return name in self.schemas

    def __bool__(self) -> bool:
        return bool(self.schemas)

    def accepts(self, name: str, args: dict[str, Any]) -> bool:
        """True when ``args`` are arguments ``name`` takes, not a schema echoed back."""
        declared = self.schemas[name].get("properties") or {}
        if any(key in SCHEMA_KEYWORDS and key not in declared for key in args):
            return False
        return bool(self._validators[name].is_valid(args))


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


def _is_definition(value: dict[str, Any]) -> bool:
    """A tool definition copied back: it describes a tool or declares its parameter schema."""
    if "description" in value:
        return True
    params = value.get("parameters")
    return isinstance(params, dict) and ("properties" in params or params.get("type") == "object")


def _as_call(value: dict[str, Any], tools: ToolSchemas) -> Call | None:
    """The call a call-shaped object makes, if it is one of the offered tools' valid calls."""
    if isinstance(value.get("function"), dict):  # OpenAI's own shape, echoed back
        if _is_definition(value["function"]) or "parameters" in value["function"]:
            return None
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or name not in tools or _is_definition(value):
        return None
    raw = value["arguments"] if "arguments" in value else value.get("parameters")
    args = _arguments(raw)
    if args is None or not tools.accepts(name, args):
        return None
    return name, args


def take_calls(scan: CallScan, text: str, tools: ToolSchemas, parallel: bool = True) -> Parsed:
    """The calls of ``scan``'s groups whose every call is valid, and the text around them.

    A group (a tag block, a fence, one bare value) is judged whole: one bad call in it leaves
    all of it as text. Only the text up to ``scan.settled`` is read.
    """
    calls: list[Call] = []
    kept: list[str] = []
    at = 0
    for group in scan.groups:
        made = [_as_call(span.value, tools) for span in group.calls]
        if all(call is not None for call in made):
            calls += [call for call in made if call is not None]
            kept.append(text[at : group.start])
            at = group.end
    kept.append(text[at : scan.settled])
    calls = distinct(calls)
    return Parsed("".join(kept).strip() or None, calls if parallel else calls[:1])


_CALL_HEAD = re.compile(r'\{\s*"name":\s*"(?P<name>[^"\\]+)",\s*"arguments":\s*')


def _object_end(text: str, start: int) -> int | None:
    """Index just past the JSON object opening at ``text[start]``, if it has closed."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


class CallScanner:
    """The calls of a constrained reply as each one closes, read from its growing text.

    Under the call grammar a call is ``{"name": "<tool>", "arguments": {...}}`` with fixed
    separators, so a call is complete the moment its arguments object closes, whatever token
    boundaries fall there.
    """

    def __init__(self, start: int = 0) -> None:
        self._scan = start

    def closed(self, text: str) -> list[tuple[str, str]]:
        """(name, arguments text) of each call that closed since the last look."""
        out = []
        while (head := _CALL_HEAD.search(text, self._scan)) is not None:
            end = _object_end(text, head.end())
            if end is None:
                break
            self._scan = end
            out.append((head["name"], text[head.end() : end]))
        return out


def distinct(calls: list[Call]) -> list[Call]:
    """The calls in order, each (name, arguments) pair once: a reply never repeats a call."""
    seen: set[str] = set()
    out: list[Call] = []
    for name, args in calls:
        key = json.dumps([name, args], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((name, args))
    return out


def parse_tool_calls(
    text: str,
    tools: ToolSchemas | Mapping[str, Mapping[str, Any]],
    parallel: bool = True,
) -> Parsed:
    """Split generated ``text`` into calls of the offered ``tools`` and the rest.

    ``tools`` maps each offered name to its argument schema. With ``parallel`` false only the
    first call counts, as ``parallel_tool_calls: false`` asks.
    """
    offered = tools if isinstance(tools, ToolSchemas) else ToolSchemas(tools)
    if not offered:
        return Parsed(text.strip() or None)
    return take_calls(scan_calls(text), text, offered, parallel)
