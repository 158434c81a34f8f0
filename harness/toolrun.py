"""Running one tool call from the model: lookup, argument parsing, errors as data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.errors import ToolError
from harness.tools import Tool, ToolContext, parse_arguments, unknown_tool_message


@dataclass
class ToolOutcome:
    call_id: str
    name: str
    content: str
    ran: bool  # the tool's code was executed (not refused before it started)
    error: ToolError | None = None


async def run_call(call: dict[str, Any], tools: dict[str, Tool], ctx: ToolContext) -> ToolOutcome:
    call_id = str(call.get("id", ""))
    function = call.get("function") or {}
    name = str(function.get("name", ""))
    tool = tools.get(name)
    if tool is None:
        return ToolOutcome(call_id, name, unknown_tool_message(name, list(tools.values())), False)
    try:
        args = parse_arguments(function.get("arguments", "{}"))
    except ToolError as exc:
        return ToolOutcome(call_id, name, f"Error: {exc}", False, exc)
    try:
        content = await tool.run(args, ctx)
    except ToolError as exc:
        return ToolOutcome(call_id, name, f"Error: {exc}", True, exc)
    return ToolOutcome(call_id, name, content, True)


def tool_message(outcome: ToolOutcome) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": outcome.call_id,
        "name": outcome.name,
        "content": outcome.content,
    }
