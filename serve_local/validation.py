"""Turn a raw request body into a checked :class:`ChatRequest`, or an actionable 400."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from serve_local.errors import InvalidRequest
from serve_local.nesting import MAX_ARGUMENTS_DEPTH, MAX_BODY_DEPTH, text_deeper_than
from serve_local.schema import ChatRequest
from serve_local.toolcalls import ToolSchemas


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


def read_json(raw: bytes, hint: str) -> Any:
    """The request body as JSON, or a 400: not UTF-8, not JSON, or nested deeper than
    :data:`~serve_local.nesting.MAX_BODY_DEPTH` (measured before it is parsed, since the
    parser recurses once per level)."""
    try:
        text = raw.decode("utf-8")
        if text_deeper_than(text, MAX_BODY_DEPTH):
            raise InvalidRequest(
                f"The request body nests more than {MAX_BODY_DEPTH} levels of brackets, this "
                "server's limit for a body.",
                code="nesting_too_deep",
            )
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(
            f"The request body is not valid JSON ({exc}).{hint}", code="invalid_json"
        ) from exc
    except ValueError as exc:  # an integer of more digits than Python reads (4,300)
        raise InvalidRequest(
            f"The request body holds a number too long to read ({exc}).", code="invalid_json"
        ) from exc


def parse_body(raw: bytes) -> ChatRequest:
    data = read_json(raw, " Send a JSON object with 'model' and 'messages'.")
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
    check_tools(request)
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
                if text_deeper_than(call.function.arguments or "", MAX_ARGUMENTS_DEPTH):
                    raise InvalidRequest(
                        f"messages[{i}].tool_calls[{j}].function.arguments nest more than "
                        f"{MAX_ARGUMENTS_DEPTH} levels of brackets, this server's limit for "
                        "a call's arguments.",
                        param=f"messages.{i}.tool_calls.{j}.function.arguments",
                        code="nesting_too_deep",
                    )
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


_CHOICE_HINT = (
    'use "none", "auto", "required" or {"type": "function", "function": {"name": <an offered '
    "tool>}}"
)


def _named_choice(choice: dict[str, Any]) -> str:
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if choice.get("type") != "function" or not isinstance(name, str) or not name:
        raise InvalidRequest(
            f"Invalid value for 'tool_choice': {json.dumps(choice)}; {_CHOICE_HINT}.",
            param="tool_choice",
            code="invalid_value",
        )
    return name


def check_tools(request: ChatRequest) -> None:
    """Each tool's parameters are a JSON Schema; ``tool_choice`` names what is offered."""
    names = [t.function.name for t in request.tools or []]
    for i, tool in enumerate(request.tools or []):
        problem = ToolSchemas.check(tool.function.parameters)
        if problem is not None:
            raise InvalidRequest(
                f"tools[{i}].function.parameters is {problem}",
                param=f"tools.{i}.function.parameters",
                code="invalid_value",
            )
        if names.count(tool.function.name) > 1:
            raise InvalidRequest(
                f"tools[{i}] repeats the name {tool.function.name!r}; tool names must be unique.",
                param=f"tools.{i}.function.name",
                code="invalid_value",
            )
    choice = request.tool_choice
    if choice is None or choice in ("none", "auto"):
        return
    if isinstance(choice, str) and choice != "required":
        raise InvalidRequest(
            f"Invalid value for 'tool_choice': {choice!r}; {_CHOICE_HINT}.",
            param="tool_choice",
            code="invalid_value",
        )
    if not names:
        raise InvalidRequest(
            f"'tool_choice' asks for a tool call ({json.dumps(choice)}) but the request "
            "offers no 'tools'.",
            param="tool_choice",
            code="invalid_value",
        )
    if isinstance(choice, dict) and (name := _named_choice(choice)) not in names:
        raise InvalidRequest(
            f"'tool_choice' names the function {name!r}, which is not among the offered "
            f"tools ({', '.join(names)}).",
            param="tool_choice",
            code="invalid_value",
        )
