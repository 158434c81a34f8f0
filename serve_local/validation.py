"""Turn a raw request body into a checked :class:`ChatRequest`, or an actionable 400."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from serve_local.errors import InvalidRequest
from serve_local.schema import ChatRequest


def _describe(exc: ValidationError) -> InvalidRequest:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    hint = first["msg"]
    if first["type"] == "missing":
        return InvalidRequest(f"Missing required parameter: '{loc}'.", param=loc, code="missing")
    if loc.endswith(".role") or loc == "role":
        got = first.get("input")
        return InvalidRequest(
            f"Invalid value for '{loc}': {got!r} is not a role; use system, developer, "
            "user, assistant or tool.",
            param=loc,
            code="invalid_value",
        )
    if loc.startswith("tools"):
        hint = (
            f"{hint}. 'tools' must be a list of "
            '{"type": "function", "function": {"name": ..., "parameters": {...}}}'
        )
    return InvalidRequest(f"Invalid value for '{loc}': {hint}.", param=loc, code="invalid_value")


def parse_body(raw: bytes) -> ChatRequest:
    try:
        data: Any = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(
            f"The request body is not valid JSON ({exc}). Send a JSON object with "
            "'model' and 'messages'.",
            code="invalid_json",
        ) from exc
    if not isinstance(data, dict):
        raise InvalidRequest(
            f"The request body must be a JSON object, not {type(data).__name__}.",
            code="invalid_json",
        )
    try:
        request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc) from exc
    check_conversation(request)
    check_options(request)
    return request


def check_conversation(request: ChatRequest) -> None:
    """Every call id is used once, and every tool message answers a call made earlier."""
    asked: set[str] = set()
    for i, message in enumerate(request.messages):
        if message.role == "assistant":
            for j, call in enumerate(message.tool_calls or []):
                if call.id in asked:
                    # A tool message names its call only by id: a repeated id is ambiguous.
                    raise InvalidRequest(
                        f"messages[{i}].tool_calls[{j}] reuses the id {call.id!r} of an earlier "
                        "tool call; give every tool call in the conversation its own id.",
                        param=f"messages.{i}.tool_calls.{j}.id",
                        code="duplicate_tool_call_id",
                    )
                asked.add(call.id)
        elif message.role == "tool":
            if not message.tool_call_id:
                raise InvalidRequest(
                    f"messages[{i}] has role 'tool' but no 'tool_call_id'; a tool message "
                    "must name the call it answers.",
                    param=f"messages.{i}.tool_call_id",
                    code="missing",
                )
            if message.tool_call_id not in asked:
                raise InvalidRequest(
                    f"messages[{i}] answers tool_call_id {message.tool_call_id!r}, which no "
                    "earlier assistant message asked for.",
                    param=f"messages.{i}.tool_call_id",
                    code="invalid_value",
                )
        if isinstance(message.content, list):
            for part in message.content:
                if part.get("type") != "text":
                    raise InvalidRequest(
                        f"messages[{i}] holds a content part of type {part.get('type')!r}; "
                        "this server reads text parts only.",
                        param=f"messages.{i}.content",
                        code="unsupported_content",
                    )


MAX_TOKENS_CEILING = 1_000_000


def check_options(request: ChatRequest) -> None:
    if request.n is not None and request.n != 1:
        raise InvalidRequest(
            f"n={request.n} is not supported; this server returns one choice (n=1).",
            param="n",
            code="unsupported_value",
        )
    for name in ("max_tokens", "max_completion_tokens"):
        value = getattr(request, name)
        if value is not None and not 0 < value <= MAX_TOKENS_CEILING:
            raise InvalidRequest(
                f"{name}={value} is out of range; use a positive number up to "
                f"{MAX_TOKENS_CEILING:,}.",
                param=name,
                code="invalid_value",
            )
