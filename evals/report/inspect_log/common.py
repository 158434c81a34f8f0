"""What both record types' logs share: Inspect's names for our finish reasons, the chat
messages of a run's state, and the error a run that cannot be exported raises. ``inspect-ai``
is an optional extra: imported on use, and its absence is an :class:`ExportError` that says
how to install it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evals.errors import EvalError
from harness.state import RunState, ToolRun

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, ChatMessageAssistant, StopReason
    from inspect_ai.tool import ToolCallError

INSTALL = 'pip install -e ".[inspect]"  (or: pip install inspect-ai)'

# Our finish reasons, in both wire shapes, as Inspect names them.
STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


class ExportError(EvalError):
    """A run file that cannot be exported, or Inspect AI missing."""


def require_inspect() -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        raise ExportError(
            f"exporting to Inspect AI logs needs the inspect-ai package: {INSTALL}"
        ) from exc


def messages_of(state: RunState, model: str) -> list[ChatMessage]:
    """The run's chat messages as Inspect's, each tool result marked with its call's error
    (refused arguments, a declined approval, a failed tool) when it had one."""
    from inspect_ai.model import (
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    log = {(r.turn, r.call_id): r for r in state.tool_log}
    found: list[ChatMessage] = []
    turn = 0
    for message in state.messages:
        role = message["role"]
        text = _text(message.get("content"))
        if role == "system":
            found.append(ChatMessageSystem(content=text))
        elif role == "user":
            found.append(ChatMessageUser(content=text))
        elif role == "assistant":
            turn += 1
            found.append(_assistant(message, text, model))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            run = log.get((turn, call_id))
            found.append(
                ChatMessageTool(
                    content=text,
                    tool_call_id=call_id,
                    function=message.get("name") or (run.name if run else None),
                    error=_tool_error(run, state) if run and not run.ok else None,
                )
            )
    return found


def _assistant(message: dict[str, Any], text: str, model: str) -> ChatMessageAssistant:
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.tool import ToolCall

    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
            parse_error = None if isinstance(arguments, dict) else "arguments are not an object"
        except json.JSONDecodeError as exc:
            arguments, parse_error = None, f"arguments are not JSON: {exc.msg}: {raw}"
        except RecursionError:
            arguments, parse_error = None, f"arguments nest too deeply to read: {raw[:200]}"
        calls.append(
            ToolCall(
                id=str(call.get("id", "")),
                function=str(function.get("name", "")),
                arguments=arguments if isinstance(arguments, dict) else {},
                parse_error=parse_error,
            )
        )
    return ChatMessageAssistant(content=text, tool_calls=calls or None, model=model)


def _tool_error(run: ToolRun, state: RunState) -> ToolCallError:
    from inspect_ai.tool import ToolCallError

    key = run.key
    if key in state.rejected:
        return ToolCallError("approval", f"rejected: {state.rejected[key] or 'no reason given'}")
    if run.invalid:
        return ToolCallError("parsing", run.error or "arguments failed the tool's schema")
    return ToolCallError("unknown", run.error or "the call failed")


def _text(content: Any) -> str:
    """A message's text; content given as parts (the Messages shape) is joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
