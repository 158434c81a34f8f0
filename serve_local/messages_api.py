"""``POST /v1/messages``: the Anthropic Messages shape over the same backends as the chat route.

A Messages request is checked here, with errors in Anthropic's shape (``{"type": "error",
"error": {"type", "message"}}``), then mapped onto the :class:`ChatRequest` every backend
already takes: ``system`` becomes a system message, ``tool_use`` blocks become tool calls,
``tool_result`` blocks become tool messages, ``tool_choice`` ``auto | any | tool | none`` becomes
``auto | required | {function} | none`` and ``disable_parallel_tool_use`` becomes
``parallel_tool_calls: false``. So a tool call is decoded under the same grammar in both shapes,
and the scripted provider counts the same tokens for the same conversation whichever shape
carried it. The backend's :class:`Completion` is then written back as content blocks with a
stop reason:

    tool_calls -> tool_use     stop -> end_turn (or stop_sequence)     length -> max_tokens
    content_filter or a refusal -> refusal                             (scripted) pause_turn
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import ClientDisconnect

from serve_local.backends.base import Backend, Completion
from serve_local.callstream import CallDelta
from serve_local.errors import APIError, InvalidRequest
from serve_local.schema import ChatRequest
from serve_local.toolcalls import ToolSchemas
from serve_local.validation import MAX_TOKENS_CEILING

# Anthropic's error type for each HTTP status this server answers with.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")  # cache_control, citations, metadata, ...


class TextBlock(_Wire):
    type: Literal["text"]
    text: str


class ToolUseBlock(_Wire):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any]


class ToolResultBlock(_Wire):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: str | list[TextBlock] = ""
    is_error: bool = False

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content)


Block = Annotated[TextBlock | ToolUseBlock | ToolResultBlock, Field(discriminator="type")]


class MessageParam(_Wire):
    role: Literal["user", "assistant"]
    content: str | list[Block]

    def blocks(self) -> list[TextBlock | ToolUseBlock | ToolResultBlock]:
        if isinstance(self.content, str):
            return [TextBlock(type="text", text=self.content)] if self.content else []
        return list(self.content)


class ToolParam(_Wire):
    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    input_schema: dict[str, Any]


class ToolChoice(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool = False


class MessagesRequest(_Wire):
    model: str = Field(min_length=1)
    max_tokens: int
    messages: list[MessageParam]
    system: str | list[TextBlock] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoice | None = None
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)

    @field_validator("messages")
    @classmethod
    def _not_empty(cls, value: list[MessageParam]) -> list[MessageParam]:
        if not value:
            raise ValueError("messages: at least one message is required")
        return value


def error_response(exc: APIError) -> JSONResponse:
    error_type = ERROR_TYPES.get(exc.status_code, "api_error")
    body = {"type": "error", "error": {"type": error_type, "message": exc.message}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def _invalid(message: str) -> InvalidRequest:
    return InvalidRequest(message)


def parse_messages(raw: bytes) -> MessagesRequest:
    try:
        data: Any = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _invalid(f"The request body is not valid JSON ({exc}).") from exc
    if not isinstance(data, dict):
        raise _invalid(f"The request body must be a JSON object, not {type(data).__name__}.")
    if isinstance(data.get("messages"), list):
        for i, message in enumerate(data["messages"]):
            if isinstance(message, dict) and message.get("role") == "system":
                raise _invalid(
                    f"messages.{i}.role: 'system' is not a message role here; pass the system "
                    "prompt as the top-level 'system' parameter."
                )
    try:
        request = MessagesRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        hint = "Field required" if first["type"] == "missing" else first["msg"]
        raise _invalid(f"{loc}: {hint}") from exc
    if not 0 < request.max_tokens <= MAX_TOKENS_CEILING:
        raise _invalid(
            f"max_tokens: {request.max_tokens} is out of range; use a positive number up to "
            f"{MAX_TOKENS_CEILING:,}."
        )
    check_blocks(request)
    check_tools(request)
    return request


def _merged(messages: list[MessageParam]) -> list[tuple[str, list[Any]]]:
    """Consecutive messages of one role read as one turn, as the Messages API reads them."""
    turns: list[tuple[str, list[Any]]] = []
    for message in messages:
        if turns and turns[-1][0] == message.role:
            turns[-1][1].extend(message.blocks())
        else:
            turns.append((message.role, message.blocks()))
    return turns


def check_blocks(request: MessagesRequest) -> None:
    """Blocks sit in the role they belong to; every ``tool_use`` of a turn is answered by a
    ``tool_result`` in the next turn, and every ``tool_result`` answers one of those."""
    seen: set[str] = set()
    asked: list[str] = []  # tool_use ids of the previous assistant turn
    turns = _merged(request.messages)
    for i, (role, blocks) in enumerate(turns):
        if role == "assistant":
            if asked:
                raise _invalid(
                    f"messages: tool_use ids were found without tool_result blocks immediately "
                    f"after: {', '.join(asked)}. Each tool_use block must have a corresponding "
                    "tool_result block in the next message."
                )
            for block in blocks:
                if isinstance(block, ToolResultBlock):
                    raise _invalid("messages: a tool_result block belongs in a user message.")
                if isinstance(block, ToolUseBlock):
                    if block.id in seen:
                        raise _invalid(
                            f"messages: tool_use ids must be unique; {block.id!r} is repeated."
                        )
                    seen.add(block.id)
                    asked.append(block.id)
            if not blocks and i != len(turns) - 1:
                raise _invalid(
                    "messages: all messages must have non-empty content except for the "
                    "optional final assistant message."
                )
            continue
        answered = []
        for block in blocks:
            if isinstance(block, ToolUseBlock):
                raise _invalid("messages: a tool_use block belongs in an assistant message.")
            if isinstance(block, ToolResultBlock):
                if block.tool_use_id not in asked:
                    raise _invalid(
                        f"messages: unexpected tool_use_id found in tool_result blocks: "
                        f"{block.tool_use_id!r}. Each tool_result block must have a "
                        "corresponding tool_use block in the previous message."
                    )
                answered.append(block.tool_use_id)
        missing = [a for a in asked if a not in answered]
        if missing:
            raise _invalid(
                f"messages: tool_use ids were found without tool_result blocks immediately "
                f"after: {', '.join(missing)}. Each tool_use block must have a corresponding "
                "tool_result block in the next message."
            )
        asked = []
        if not blocks:
            raise _invalid("messages: a user message must have non-empty content.")


def check_tools(request: MessagesRequest) -> None:
    names = [t.name for t in request.tools or []]
    for i, tool in enumerate(request.tools or []):
        problem = ToolSchemas.check(tool.input_schema)
        if problem is None and tool.input_schema.get("type") != "object":
            problem = "its type must be 'object'"
        if problem is not None:
            raise _invalid(f"tools.{i}.input_schema: not a valid JSON Schema: {problem}")
        if names.count(tool.name) > 1:
            raise _invalid(f"tools: tool names must be unique; {tool.name!r} is repeated.")
    choice = request.tool_choice
    if choice is None or choice.type in ("auto", "none"):
        return
    if not names:
        raise _invalid(
            f"tool_choice: {{'type': '{choice.type}'}} asks for a tool call but the request "
            "offers no tools."
        )
    if choice.type == "tool" and choice.name not in names:
        raise _invalid(
            f"tool_choice: the tool {choice.name!r} is not among the offered tools "
            f"({', '.join(names)})."
        )


def _arguments(block: ToolUseBlock) -> dict[str, Any]:
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.input)},
    }


def _tool_text(block: ToolResultBlock) -> str:
    text = block.text()
    if block.is_error and not text.lower().startswith("error"):
        return f"Error: {text}"  # the chat vocabulary has no is_error: say it in words
    return text


def to_chat(request: MessagesRequest) -> ChatRequest:
    """The same request in the chat shape the backends take."""
    messages: list[dict[str, Any]] = []
    if request.system:
        system = request.system
        text = system if isinstance(system, str) else "".join(b.text for b in system)
        messages.append({"role": "system", "content": text})
    names: dict[str, str] = {}
    for role, blocks in _merged(request.messages):
        texts = [b.text for b in blocks if isinstance(b, TextBlock)]
        if role == "assistant":
            calls = [_arguments(b) for b in blocks if isinstance(b, ToolUseBlock)]
            names.update({b.id: b.name for b in blocks if isinstance(b, ToolUseBlock)})
            message: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(texts) if texts else None,
            }
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            continue
        for block in blocks:
            if isinstance(block, ToolResultBlock):
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.tool_use_id,
                        "name": names[block.tool_use_id],
                        "content": _tool_text(block),
                    }
                )
        if texts:
            messages.append({"role": "user", "content": "\n\n".join(texts)})
    chat: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "stop": request.stop_sequences or None,
    }
    if request.tools:
        chat["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    choice = request.tool_choice
    if choice is not None:
        chat["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}.get(
            choice.type, {"type": "function", "function": {"name": choice.name}}
        )
        if choice.disable_parallel_tool_use:
            chat["parallel_tool_calls"] = False
    return ChatRequest.model_validate(chat)


def stop_reason(completion: Completion) -> str:
    if completion.refusal is not None or completion.finish_reason == "content_filter":
        return "refusal"
    if completion.stop_reason is not None:
        return completion.stop_reason
    return STOP_REASONS.get(completion.finish_reason, "end_turn")


def _input(arguments: str) -> dict[str, Any]:
    """A call's input object. Arguments that are not a JSON object (only a scripted malformed
    call has such) go out as an empty input: the wire has no place for anything else."""
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def content_blocks(completion: Completion) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = completion.content or completion.refusal
    if text:
        blocks.append({"type": "text", "text": text})
    for call in completion.tool_calls:
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": _input(function["arguments"]),
            }
        )
    return blocks


def _usage(completion: Completion) -> dict[str, int]:
    return {"input_tokens": completion.prompt_tokens, "output_tokens": completion.completion_tokens}


def message_body(completion: Completion, message_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": content_blocks(completion),
        "stop_reason": stop_reason(completion),
        "stop_sequence": completion.stop_sequence,
        "usage": _usage(completion),
    }
    if completion.timings is not None:
        body["timings"] = completion.timings.model_dump()
    return body


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n"


def _pieces(completion: Completion) -> Iterator[str | CallDelta]:
    """A finished reply as the items a live stream yields: text, then each call."""
    text = completion.content or completion.refusal
    if text:
        yield text
    for index, call in enumerate(completion.tool_calls):
        function = call["function"]
        yield CallDelta(index, "", call["id"], function["name"])
        yield CallDelta(index, json.dumps(_input(function["arguments"])))


async def _replayed(completion: Completion) -> AsyncIterator[str | CallDelta | Completion]:
    for piece in _pieces(completion):
        yield piece
    yield completion


async def stream_events(
    items: AsyncIterator[str | CallDelta | Completion],
    message_id: str,
    model: str,
    input_tokens: int,
) -> AsyncIterator[str]:
    """Anthropic's SSE events for a reply given as text pieces and call deltas, then its
    completion: ``message_start``, a ``content_block_start`` / ``_delta`` / ``_stop`` run per
    block, ``message_delta`` with the stop reason and usage, ``message_stop``."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    }
    yield _sse("message_start", {"message": start})
    index, open_kind = -1, None
    try:
        item = await anext(items)
        while not isinstance(item, Completion):
            if isinstance(item, CallDelta) and item.id is not None:
                if open_kind is not None:
                    yield _sse("content_block_stop", {"index": index})
                index, open_kind = index + 1, "tool_use"
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": item.id,
                    "name": item.name,
                    "input": {},
                }
                yield _sse("content_block_start", {"index": index, "content_block": block})
            elif isinstance(item, CallDelta):
                delta = {"type": "input_json_delta", "partial_json": item.arguments}
                yield _sse("content_block_delta", {"index": index, "delta": delta})
            else:
                if open_kind != "text":
                    if open_kind is not None:
                        yield _sse("content_block_stop", {"index": index})
                    index, open_kind = index + 1, "text"
                    text_block = {"type": "text", "text": ""}
                    yield _sse("content_block_start", {"index": index, "content_block": text_block})
                delta = {"type": "text_delta", "text": item}
                yield _sse("content_block_delta", {"index": index, "delta": delta})
            item = await anext(items)
    except APIError as exc:
        error: dict[str, Any] = {
            "type": ERROR_TYPES.get(exc.status_code, "api_error"),
            "message": exc.message,
        }
        yield _sse("error", {"error": error})
        return
    if open_kind is not None:
        yield _sse("content_block_stop", {"index": index})
    end = {"stop_reason": stop_reason(item), "stop_sequence": item.stop_sequence}
    yield _sse("message_delta", {"delta": end, "usage": _usage(item)})
    yield _sse("message_stop", {})


WatchDisconnect = Callable[[Request, threading.Event], Coroutine[Any, Any, None]]


def add_messages_route(
    app: FastAPI,
    backend: Backend,
    watch_disconnect: WatchDisconnect,
    streams_calls: Callable[[Backend], bool],
) -> None:
    """Serve ``POST /v1/messages`` from ``backend`` on ``app``."""

    @app.post("/v1/messages", response_model=None)
    async def messages(request: Request) -> JSONResponse | StreamingResponse:
        try:
            return await _answer(request)
        except APIError as exc:
            return error_response(exc)

    async def _answer(request: Request) -> JSONResponse | StreamingResponse:
        if not backend.ready:
            raise APIError("The model is still loading; retry shortly.", status_code=503)
        try:
            raw = await request.body()
        except ClientDisconnect:
            return JSONResponse({}, status_code=499)  # nobody is left to read it
        asked = parse_messages(raw)
        chat = to_chat(asked)
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        live = getattr(backend, "stream", None)
        no_calls = not chat.tools or chat.tool_choice == "none"
        if asked.stream and live is not None and (no_calls or streams_calls(backend)):
            served = str(backend.models()[0]["id"])
            counter = getattr(backend, "prompt_tokens", None)
            input_tokens = len(counter(chat)) if counter is not None else 0
            pieces = live(chat, threading.Event())
            first = await anext(pieces)  # errors (503, context length) surface as HTTP codes

            async def items() -> AsyncIterator[str | CallDelta | Completion]:
                yield first
                async for piece in pieces:
                    yield piece

            events = stream_events(items(), message_id, served, input_tokens)
            return StreamingResponse(events, media_type="text/event-stream")
        cancel = threading.Event()
        watcher = asyncio.create_task(watch_disconnect(request, cancel))
        try:
            completion = await backend.complete(chat, cancel)
        finally:
            cancel.set()
            watcher.cancel()
        if asked.stream:
            events = stream_events(
                _replayed(completion), message_id, completion.model, completion.prompt_tokens
            )
            return StreamingResponse(events, media_type="text/event-stream")
        return JSONResponse(message_body(completion, message_id))
