"""Running one tool call from the model: lookup, argument parsing, errors as data."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.errors import ToolError
from harness.tools import Tool, ToolContext, parse_arguments


@dataclass
class ToolOutcome:
    call_id: str
    name: str
    arguments: str
    content: str  # the tool's result, or "" when it failed (see error)
    ran: bool  # the tool's code was executed (not refused before it started)
    ms: float = 0.0
    error: ToolError | None = None
    cached: bool = False


def call_parts(call: dict[str, Any]) -> tuple[str, str, str]:
    """(call id, tool name, raw arguments) of a wire-shaped tool call."""
    function = call.get("function") or {}
    return (
        str(call.get("id", "")),
        str(function.get("name", "")),
        str(function.get("arguments") or "{}"),
    )


async def run_call(call: dict[str, Any], tools: dict[str, Tool], ctx: ToolContext) -> ToolOutcome:
    call_id, name, arguments = call_parts(call)
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(tools)
        error = ToolError(f"there is no tool named {name!r}. Available tools: {known}.")
        return ToolOutcome(call_id, name, arguments, "", False, error=error)
    try:
        args = parse_arguments(arguments)
    except ToolError as exc:
        return ToolOutcome(call_id, name, arguments, "", False, error=exc)
    start = time.perf_counter()
    try:
        content = await tool.run(args, ctx)
    except ToolError as exc:
        return ToolOutcome(call_id, name, arguments, "", True, _ms(start), exc)
    return ToolOutcome(call_id, name, arguments, content, True, _ms(start))


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def tool_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
