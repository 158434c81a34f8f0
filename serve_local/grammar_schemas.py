"""A tool's JSON Schema as the call grammar embeds it (:mod:`serve_local.toolgrammar`).

Every schema the OpenAI API takes is taken: the tools' argument schemas are prepared here
before the grammar is built.

- Local ``$ref``s resolve inside the call grammar: a tool schema that uses them moves under the
  root's ``$defs`` with every pointer rebased (inside the call object ``#/$defs/X`` would name
  the root's, not the tool's).
- Objects take only the keys they declare unless they say otherwise (``_closed``): a forced call
  of a tool without arguments is ``{}``, never the schema's own keywords written back.
- A keyword llguidance cannot express constrains less, never refuses the request: each tool is
  compiled alone first, and what was loosened (:class:`Loosened`) is said in the reply and the
  log; the reply's calls are parsed against what the grammar enforced.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Whitespace between tokens is free (a model may pretty-print its call over several indented
# lines, which the trigger already accepts) but bounded, so a constrained model cannot spin on
# blanks forever.
_JSON_OPTIONS = {
    "whitespace_flexible": True,
    "whitespace_pattern": r"[\x20\x0A\x0D\x09]{1,24}",
    "item_separator": ",",
    "key_separator": ":",
    "lenient": True,
}


def llguidance_module() -> Any:
    try:
        import llguidance
    except ImportError as exc:  # an extra of the model backends; a clear error if missing
        raise RuntimeError(
            "constrained tool calls need llguidance: run `make serve-local` (it installs it) "
            "or `pip install llguidance`; or start the server with --tool-grammar off"
        ) from exc
    return llguidance


@dataclass(frozen=True)
class Loosened:
    """A keyword of a tool's schema the grammar cannot express, left to the check after the
    reply (the parser validates every call against the schema as sent)."""

    tool: str
    keyword: str
    detail: str


# Keywords whose values are subschemas: one, a list of them, or a map of names to them. Only
# these are walked when a schema moves under another root, so a "$ref" that is data (in an
# enum, a default, a property's name) is never rewritten.
_ONE_SCHEMA = ("additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedItems", "unevaluatedProperties", "additionalItems")  # fmt: skip
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# What lets an object schema admit keys beyond its declared properties.
_OPENS_KEYS = (
    *("$ref", "allOf", "anyOf", "oneOf", "additionalProperties", "patternProperties", "if"),
    *("then", "else", "dependentSchemas", "unevaluatedProperties", "propertyNames"),
)


def _walk(schema: Any, edit: Any, under: str | None = None) -> Any:
    """A copy of ``schema`` with ``edit(node, under)`` applied to every subschema (a dict),
    parents first; ``under`` is the keyword the subschema sits under (None at the top)."""
    if not isinstance(schema, dict):
        return schema
    node = edit(dict(schema), under)
    for key, value in node.items():
        if key in _ONE_SCHEMA or (key == "items" and isinstance(value, dict)):
            node[key] = _walk(value, edit, key)
        elif key in _SCHEMA_LIST or (key == "items" and isinstance(value, list)):
            node[key] = [_walk(v, edit, key) for v in value] if isinstance(value, list) else value
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            node[key] = {name: _walk(v, edit, key) for name, v in value.items()}
    return node


def _rebased(schema: Mapping[str, Any], base: str) -> dict[str, Any]:
    """``schema`` to be placed at the JSON pointer ``base`` of a larger document: each local
    ``$ref`` (``#``, ``#/$defs/X``, any pointer into it) made to point there."""

    def edit(node: dict[str, Any], _: str | None) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            node["$ref"] = base + ref[1:]
        return node

    return dict(_walk(schema, edit))


def _has_ref(schema: Any) -> bool:
    found: list[bool] = []

    def edit(node: dict[str, Any], _: str | None) -> dict[str, Any]:
        found.append(isinstance(node.get("$ref"), str))
        return node

    _walk(schema, edit)
    return any(found)


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's arguments schema for the grammar, its objects closed: an object schema that
    leaves ``additionalProperties`` unsaid takes only the keys it declares (none, for a tool
    without arguments: ``{}``), so a forced call cannot be filled with invented keys or with
    the schema's own keywords. Members of an ``allOf`` stay open, since each declares only part
    of the keys; so does a nested object that declares no keys (a free-form map)."""

    def close(node: dict[str, Any], under: str | None) -> dict[str, Any]:
        declares = under is None or node.get("properties")
        if declares and under != "allOf" and not any(k in node for k in _OPENS_KEYS):
            node["additionalProperties"] = False
        return node

    return dict(_walk(dict(schema) or {"type": "object"}, close))


def _problems(schema: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """(fails to compile, what llguidance leaves unconstrained) for one JSON Schema alone."""
    llguidance = llguidance_module()
    grammar = llguidance.LLMatcher.grammar_from_json_schema({**schema, "x-guidance": _JSON_OPTIONS})
    failed, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    return bool(failed), [str(m) for m in messages]


_UNIMPLEMENTED = re.compile(r"Unimplemented keys: \[(.*?)\]")


def _keywords(messages: list[str]) -> list[tuple[str, str]]:
    """(keyword, message) for each warning llguidance gave while compiling leniently."""
    found = []
    for message in messages:
        listed = _UNIMPLEMENTED.search(message)
        if listed:
            found += [(k.strip().strip('"'), message) for k in listed.group(1).split(",")]
        elif message.startswith("Unknown format"):
            found.append(("format", message))
        else:
            found.append(("schema", message))
    return found


def _without_bad_patterns(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``schema`` less every ``pattern`` the grammar's regex engine refuses (look-around,
    back-references): those strings are then free, and checked after the reply."""
    dropped: list[str] = []

    def edit(node: dict[str, Any], _: str | None) -> dict[str, Any]:
        pattern = node.get("pattern")
        if isinstance(pattern, str) and _problems({"type": "string", "pattern": pattern})[0]:
            dropped.append(pattern)
            del node["pattern"]
        return node

    return dict(_walk(schema, edit)), dropped


@functools.lru_cache(maxsize=512)
def _for_grammar(name: str, schema_json: str) -> tuple[str, tuple[Loosened, ...]]:
    """One tool's arguments schema as the grammar embeds it, and what had to be loosened."""
    args = _closed(json.loads(schema_json))
    failed, messages = _problems(args)
    loosened = [Loosened(name, keyword, message) for keyword, message in _keywords(messages)]
    if failed:
        args, dropped = _without_bad_patterns(args)
        loosened = [Loosened(name, "pattern", p) for p in dropped]
        failed, messages = _problems(args)
        loosened += [Loosened(name, k, m) for k, m in _keywords(messages)]
    if failed:  # nothing narrower compiles: any object, the arguments checked after the reply
        args = {"type": "object"}
        loosened = [Loosened(name, "schema", "; ".join(messages) or "does not compile")]
    return json.dumps(args), tuple(loosened)


def grammar_tools(
    tools: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[Loosened]]:
    """The offered tools' arguments schemas as the call grammar embeds them (each compiled
    alone first, so one the grammar cannot express constrains less instead of failing the
    request), and every keyword so loosened."""
    ready: dict[str, dict[str, Any]] = {}
    loosened: list[Loosened] = []
    for name, schema in tools.items():
        args, notes = _for_grammar(name, json.dumps(schema))  # key order is property order
        ready[name] = json.loads(args)
        loosened += notes
    return ready, loosened


def call_schema(tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One call object: ``{"name": <offered name>, "arguments": <that tool's arguments>}``.

    A tool schema with ``$ref``s moves under the root's ``$defs`` (its pointers rebased), since
    inside the call object ``#/$defs/X`` would name the root's, not the tool's.
    """
    defs: dict[str, Any] = {}
    variants = []
    for i, (name, parameters) in enumerate(tools.items()):
        args = dict(parameters) or {"type": "object"}
        if _has_ref(args):
            key = f"tool{i}"
            defs[key] = _rebased(args, f"#/$defs/{key}")
            args = {"$ref": f"#/$defs/{key}"}
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": args},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    call: dict[str, Any] = variants[0] if len(variants) == 1 else {"anyOf": variants}
    if defs:
        call["$defs"] = defs
    return {**call, "x-guidance": _JSON_OPTIONS}
