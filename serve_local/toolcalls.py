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
is left as text: a bogus call is worse than an honest answer the harness can score. A call of an
offered tool refused so is reported (:class:`Refused`, with the reason), so that what the model
got wrong stays countable.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from jsonschema import validators
from jsonschema.exceptions import SchemaError, best_match

from serve_local.callshape import CallScan, scan_calls
from serve_local.nesting import MAX_ARGUMENTS_DEPTH, MAX_SCHEMA_DEPTH, deeper_than, text_deeper_than

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


@dataclass(frozen=True)
class Refused:
    """A call of an offered tool the parser would not make, and why (its text stays content)."""

    name: str
    arguments: str  # as the model wrote them, as JSON text
    reason: str


@dataclass
class Parsed:
    content: str | None
    calls: list[Call] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


class ToolSchemas:
    """The offered tools' argument schemas, each compiled once into a ``jsonschema`` validator."""

    def __init__(self, tools: Mapping[str, Mapping[str, Any]]) -> None:
        self.schemas = {name: dict(schema) for name, schema in tools.items()}
        self._validators = {
            name: validators.validator_for(schema)(schema) for name, schema in self.schemas.items()
        }

    @staticmethod
    def check(schema: Mapping[str, Any]) -> str | None:
        """Why ``schema`` cannot be a tool's arguments schema, or None when it can: it is a
        valid JSON Schema of type object (or empty: no parameters), and every ``$ref`` in it
        resolves inside it without looping back on the same arguments (which would recurse
        forever when a call is checked). Both routes check their tools with this."""
        if deeper_than(schema, MAX_SCHEMA_DEPTH):
            return (
                f"nested more than {MAX_SCHEMA_DEPTH} levels deep, this server's limit for a "
                "tool's schema"
            )
        # An agent loop sends the same tools with every request: each schema is checked once.
        return _checked(json.dumps(schema, ensure_ascii=False))

    def __contains__(self, name: object) -> bool:
        return name in self.schemas

    def __bool__(self) -> bool:
        return bool(self.schemas)

    def accepts(self, name: str, args: dict[str, Any]) -> bool:
        """True when ``args`` are arguments ``name`` takes, not a schema echoed back."""
        return self.problem(name, args) is None

    def problem(self, name: str, args: dict[str, Any]) -> str | None:
        """Why ``args`` are not arguments ``name`` takes, or None when they are."""
        declared = _top(self.schemas[name]).get("properties") or {}
        keywords = sorted(key for key in args if key in SCHEMA_KEYWORDS and key not in declared)
        if keywords:
            return f"the arguments hold JSON Schema keywords the tool does not take: {keywords}"
        error = best_match(self._validators[name].iter_errors(args))
        if error is None:
            return None
        return f"the tool's schema refuses the arguments: {error.message}"


# Keywords whose subschemas apply to the same value as the schema holding them: a $ref loop
# through these alone never reaches a smaller part of the arguments.
_SAME_VALUE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


def _resolve(schema: Any, ref: str) -> tuple[str, ...] | None:
    """The JSON pointer path ``ref`` (``#/...``) names in ``schema``, if it names something."""
    if ref == "#":
        return ()
    if not ref.startswith("#/"):
        return None
    path = tuple(unquote(p).replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/"))
    node = schema
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return path


def _top(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema's top level, through a top-level ``$ref`` chain (as pydantic writes a
    recursive model: ``{"$defs": {...}, "$ref": "#/$defs/Tree"}``)."""
    node: Any = schema
    for _ in range(MAX_SCHEMA_DEPTH):
        if "type" in node or not isinstance(node.get("$ref"), str):
            break
        path = _resolve(schema, node["$ref"])
        if path is None:
            break
        target: Any = schema
        for part in path:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if not isinstance(target, Mapping):
            break
        node = target
    return dict(node)


def _reference_problem(schema: Mapping[str, Any]) -> str | None:
    """Why the ``$ref``s of ``schema`` cannot be followed safely, or None."""
    nodes: dict[tuple[str, ...], dict[str, Any]] = {}

    def collect(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            nodes[path] = node
            for key, value in node.items():
                collect(value, (*path, str(key)))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                collect(value, (*path, str(i)))

    collect(dict(schema), ())
    edges: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for path, node in nodes.items():
        ref = node.get("$ref")
        if isinstance(ref, str) and path[-1:] != ("properties",):
            target = _resolve(schema, ref)
            if target is None:
                where = "/".join(path) or "the top level"
                if not ref.startswith("#"):
                    return f"not usable: $ref {ref!r} (at {where}) points outside the schema"
                return f"not usable: $ref {ref!r} (at {where}) names nothing in the schema"
            edges.setdefault(path, []).append(target)
        for key in _SAME_VALUE:
            sub = node.get(key)
            if isinstance(sub, dict) and key == "dependentSchemas":
                edges.setdefault(path, []).extend((*path, key, name) for name in sub)
            elif isinstance(sub, list):
                edges.setdefault(path, []).extend((*path, key, str(i)) for i in range(len(sub)))
            elif isinstance(sub, dict):
                edges.setdefault(path, []).append((*path, key))
    state: dict[tuple[str, ...], int] = {}  # 1: on the current path, 2: done

    def loops(path: tuple[str, ...]) -> bool:
        state[path] = 1
        for target in edges.get(path, []):
            if state.get(target) == 1 or (target not in state and loops(target)):
                return True
        state[path] = 2
        return False

    for path in nodes:
        if path not in state and loops(path):
            where = "/".join(path) or "the top level"
            return (
                f"not usable: its $ref at {where} leads back to itself without descending into "
                "the arguments, so checking a call would recurse forever"
            )
    return None


def _arguments(value: Any) -> dict[str, Any] | None:
    """Arguments as an object; a JSON string (even encoded twice) is decoded."""
    for _ in range(3):
        if isinstance(value, dict):
            return value
        if value is None:
            return {}
        if not isinstance(value, str):
            return None
        if text_deeper_than(value, MAX_ARGUMENTS_DEPTH):
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


def _verdict(value: dict[str, Any], tools: ToolSchemas) -> Call | Refused | None:
    """The call a call-shaped object makes, why an offered tool's call is refused, or None when
    the object names no offered tool."""
    if isinstance(value.get("function"), dict):  # OpenAI's own shape, echoed back
        definition = _is_definition(value["function"]) or "parameters" in value["function"]
        value = value["function"]
    else:
        definition = _is_definition(value)
    name = value.get("name")
    if not isinstance(name, str) or name not in tools:
        return None
    raw = value["arguments"] if "arguments" in value else value.get("parameters")
    written = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    if definition:
        return Refused(name, written, "a tool definition, not a call")
    args = _arguments(raw)
    if args is None:
        return Refused(name, written, "the arguments are not a JSON object")
    problem = tools.problem(name, args)
    return (name, args) if problem is None else Refused(name, written, problem)


def take_calls(scan: CallScan, text: str, tools: ToolSchemas, parallel: bool = True) -> Parsed:
    """The calls of ``scan``'s groups whose every call is valid, and the text around them.

    A group (a tag block, a fence, one bare value) is judged whole: one bad call in it leaves
    all of it as text. Only the text up to ``scan.settled`` is read.
    """
    calls: list[Call] = []
    refused: list[Refused] = []
    kept: list[str] = []
    at = 0
    for group in scan.groups:
        verdicts = [_verdict(span.value, tools) for span in group.calls]
        made = [v for v in verdicts if isinstance(v, tuple)]
        if len(made) == len(verdicts):
            calls += made
            kept.append(text[at : group.start])
            at = group.end
        else:
            refused += [v for v in verdicts if isinstance(v, Refused)]
    kept.append(text[at : scan.settled])
    calls = distinct(calls)
    return Parsed("".join(kept).strip() or None, calls if parallel else calls[:1], refused)


_CALL_HEAD = re.compile(r'\{\s*"name"\s*:\s*"(?P<name>[^"\\]+)"\s*,\s*"arguments"\s*:\s*')


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

    Under the call grammar a call is ``{"name": "<tool>", "arguments": {...}}`` (keys in that
    order, any whitespace between tokens), so a call is complete the moment its arguments
    object closes, whatever token boundaries fall there.
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


@functools.lru_cache(maxsize=512)
def _checked(canonical: str) -> str | None:
    """``ToolSchemas.check`` past the depth limit, on a schema as JSON text."""
    schema = json.loads(canonical)
    try:
        validators.validator_for(schema).check_schema(dict(schema))
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    problem = _reference_problem(schema)
    if problem is not None:
        return problem
    kind = _top(schema).get("type")
    if kind is not None and "object" not in ([kind] if isinstance(kind, str) else kind):
        return (
            f"not an object schema (type {kind!r}); a tool's arguments are "
            'a JSON object, so its schema needs "type": "object"'
        )
    return None
