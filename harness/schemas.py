"""A tool's JSON Schema as the loop applies it: checked whole when the tool is offered, and
applied to a call's arguments under bounds, since the schema may come from a server nobody
here wrote.

- When a tool is listed (:func:`schema_problem`): a valid JSON Schema, every ``$ref`` in it
  resolves inside it (a pointer to nothing or to another document is refused there, not at
  the first call), and every ``pattern`` compiles.
- When a call is checked (:func:`validator_for`): ``pattern`` and ``patternProperties`` are
  matched with the ``regex`` engine under :data:`PATTERN_TIMEOUT_S` per match (Python's
  ``re`` would backtrack for an hour on ``^(a+)+$`` and 35 characters, with no timeout able to
  fire); a match that runs out of time, or any other failure of the schema itself, is
  :class:`SchemaFault`, the schema's fault and never the model's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import regex
from jsonschema import ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

PATTERN_TIMEOUT_S = 0.5


class SchemaFault(Exception):
    """The schema itself cannot be applied (it names what failed)."""


def _search(pattern: str, text: str) -> bool:
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError as exc:
        raise SchemaFault(
            f"its pattern {pattern[:80]!r} took more than {PATTERN_TIMEOUT_S:g} s on a "
            f"{len(text)}-character string"
        ) from exc
    except regex.error as exc:
        raise SchemaFault(f"its pattern {pattern[:80]!r} does not compile: {exc}") from exc


def _pattern(_: Any, pattern: str, instance: Any, __: Any) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, _: Any
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def validator_for(schema: Mapping[str, Any]) -> Any:
    """A validator of ``schema`` whose patterns are matched under a time bound."""
    cls = validators.validator_for(schema)
    bounded = validators.extend(  # type: ignore[no-untyped-call]
        cls, {"pattern": _pattern, "patternProperties": _pattern_properties}
    )
    return bounded(schema)


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot be a tool's arguments schema, or None: it is a valid JSON Schema,
    each ``$ref`` resolves inside it, and each ``pattern`` compiles."""
    try:
        validators.validator_for(schema).check_schema(dict(schema))
    except SchemaError as exc:
        return exc.message
    resource = Resource.from_contents(dict(schema), default_specification=DRAFT202012)
    resolver = Registry().with_resource("", resource).resolver(base_uri="")
    for node in _walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except Unresolvable:
                return f"its $ref {ref[:80]!r} does not resolve inside the schema"
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                regex.compile(pattern)
            except regex.error as exc:
                return f"its pattern {pattern[:80]!r} does not compile: {exc}"
    return None
