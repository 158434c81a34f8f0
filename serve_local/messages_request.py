"""The Anthropic Messages request: its wire types, the checks that make bad input a 400, and
its mapping onto the :class:`ChatRequest` every backend already takes (``system`` becomes a
system message, ``tool_use`` blocks tool calls, ``tool_result`` blocks tool messages,
``tool_choice`` ``auto | any | tool | none`` becomes ``auto | required | {function} | none`` and
``disable_parallel_tool_use`` becomes ``parallel_tool_calls: false``)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from serve_local.errors import InvalidRequest
from serve_local.nesting import MAX_ARGUMENTS_DEPTH, deeper_than
from serve_local.schema import ChatRequest
from serve_local.toolcalls import ToolSchemas
from serve_local.validation import MAX_TOKENS_CEILING, read_json


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


def _invalid(message: str) -> InvalidRequest:
    return InvalidRequest(message)


def parse_messages(raw: bytes) -> MessagesRequest:
    data = read_json(raw, "")
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
                    if deeper_than(block.input, MAX_ARGUMENTS_DEPTH):
                        raise _invalid(
                            f"messages: the input of tool_use {block.id!r} nests more than "
                            f"{MAX_ARGUMENTS_DEPTH} levels, this server's limit for a call's "
                            "arguments."
                        )
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
        if problem is not None:
            raise _invalid(f"tools.{i}.input_schema: {problem}")
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
