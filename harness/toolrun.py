"""Running one tool call from the model: lookup, argument parsing, errors as data."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from harness.cancel import Cancelled
from harness.errors import ToolBug, ToolError, ToolServerFailed
from harness.state import Call
from harness.tools import Tool, ToolContext, check_arguments, check_depth, parse_arguments


@dataclass
class ToolOutcome:
    call: Call
    content: str  # the tool's result, or "" when it failed (see error)
    ran: bool  # the tool's code was executed (not refused before it started)
    ms: float = 0.0
    error: ToolError | None = None
    cached: bool = False
    repeated: bool = False  # answered by the repeated-call guard
    facts: dict[str, Any] | None = None  # what the tool reported about its run (ToolContext)


async def run_call(call: Call, tools: dict[str, Tool], ctx: ToolContext) -> ToolOutcome:
    """The call's outcome; only cancellation and a failed tool server escape, every other
    failure becomes an error result."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(tools)
        error = ToolError(f"there is no tool named {call.name!r}. Available tools: {known}.")
        return ToolOutcome(call, "", False, error=error)
    try:
        args = parse_arguments(call.arguments)
        if tool.judges_arguments:
            args = check_depth(args)
        else:
            # Off the event loop: the schema may be a server's, its patterns matched under a
            # bound.
            args = await asyncio.to_thread(check_arguments, tool, args)
    except ToolError as exc:
        return ToolOutcome(call, "", False, error=exc)
    start = time.perf_counter()
    try:
        content = await tool.run(args, ctx)
    except (Cancelled, ToolServerFailed):
        raise  # ToolServerFailed: the machinery failed, the run stops (harness.loop.framed)
    except ToolError as exc:
        return ToolOutcome(call, "", True, _ms(start), exc, facts=ctx.facts or None)
    except Exception as exc:  # a bug in the tool must not end the run: the model reads it
        return ToolOutcome(call, "", True, _ms(start), ToolBug(call.name, exc))
    return ToolOutcome(call, content, True, _ms(start), facts=ctx.facts or None)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def capped(content: str, cap_bytes: int) -> tuple[str, dict[str, int] | None]:
    """``content`` cut to at most ``cap_bytes`` bytes of UTF-8 (on a character boundary), the
    cut stated at its end; with what was cut, as the trace records it, or None. A character
    that is not text (a lone surrogate a tool passed on) becomes "?"."""
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        data = content.encode("utf-8", errors="replace")
        content = data.decode("utf-8")
    if len(data) <= cap_bytes:
        return content, None
    kept = data[:cap_bytes].decode("utf-8", errors="ignore")
    note = f"\n[cut: the result was {len(data)} bytes; only the first {cap_bytes} are shown]"
    return kept + note, {"bytes": len(data), "kept_bytes": len(kept.encode("utf-8"))}


def tool_message(call: Call, content: str, is_error: bool = False) -> dict[str, Any]:
    """The result as the transcript holds it; ``is_error`` marks a failed call for the wire
    shapes that carry the flag (the Messages shape's ``tool_result``)."""
    message = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}
    return {**message, "is_error": True} if is_error else message
