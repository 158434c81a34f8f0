"""How deeply JSON may nest on this server, and the one measure of it.

Python's JSON reader, jsonschema and the chat templates all recurse once per level, so a body,
a schema or a call nested a few hundred levels deep would end in ``RecursionError`` (a 500, or a
crashed scan of a model's reply). Every place that reads JSON from a client or a model measures
the depth first, without recursing, and treats what is too deep as bad input:

* a request body deeper than :data:`MAX_BODY_DEPTH`: 400 ``nesting_too_deep``;
* a tool's parameter schema deeper than :data:`MAX_SCHEMA_DEPTH`: 400 ``nesting_too_deep``;
* a call's arguments in the conversation deeper than :data:`MAX_ARGUMENTS_DEPTH`: 400
  ``nesting_too_deep``;
* a value in a model's reply deeper than :data:`MAX_ARGUMENTS_DEPTH` plus the levels a call
  wraps its arguments in: not a call, so the reply keeps it as text.

Depth counts brackets: ``{}`` and ``[]`` are depth 1, ``{"a": [1]}`` is depth 2.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MAX_ARGUMENTS_DEPTH",
    "MAX_BODY_DEPTH",
    "MAX_CALL_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "deeper_than",
    "text_deeper_than",
    "value_deeper_than",
]

MAX_BODY_DEPTH = 128
MAX_SCHEMA_DEPTH = 64
MAX_ARGUMENTS_DEPTH = 32
# A call in a reply wraps its arguments: wrapper braces (3), a list of calls, the call object,
# OpenAI's "function" object.
MAX_CALL_DEPTH = MAX_ARGUMENTS_DEPTH + 6

# A JSON string (closed or running to the end of the text), or one bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]|[\]}]')


def text_deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside strings anywhere in ``text`` nest deeper than ``limit``; stray
    closing brackets do not count against later ones."""
    depth = 0
    for token in _TOKEN.finditer(text):
        c = text[token.start()]
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(depth - 1, 0)
    return False


def value_deeper_than(text: str, start: int, limit: int) -> bool:
    """Whether the JSON value opening at ``text[start]`` nests deeper than ``limit`` before it
    closes. The scan stops where the value closes or the limit is passed, so its cost is at
    most the value's own length."""
    depth = 0
    for token in _TOKEN.finditer(text, start):
        c = text[token.start()]
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
            if depth <= 0:
                return False
        elif depth == 0:
            return False  # a string, not a container
    return False


def deeper_than(value: Any, limit: int) -> bool:
    """Whether a decoded JSON value (dicts and lists) nests deeper than ``limit``; iterative,
    so any depth is measured without recursing."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
