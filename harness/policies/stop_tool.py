"""``stop_tool``: a tool whose call ends the run at once; no call of that reply runs (τ²'s solo
agent ends with ``done`` so, its other calls dropped)."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting
from harness.state import RunState, last_reply

STOP_TOOL: Setting[str | None] = Setting(
    "stop_tool",
    None,
    "a tool whose call ends the run at once, no call of that reply run",
    "text",
    optional=True,
    metavar="TOOL",
    doc=(
        "a tool whose call ends the run at once: no call of that reply runs, and the answer is "
        "the tool's name (τ²'s solo `done`)"
    ),
)


def stop_called(state: RunState, name: str | None) -> bool:
    """Whether the newest reply called ``name``."""
    last = last_reply(state)
    if not name or last is None:
        return False
    calls = state.messages[last[0]].get("tool_calls") or []
    return any((call.get("function") or {}).get("name") == name for call in calls)


class StopTool(Hook):
    name = "stop_tool"
    settings = (STOP_TOOL,)

    def answer(self, state: RunState, config: Config) -> str | None:
        name = STOP_TOOL.of(config)
        return name if stop_called(state, name) else None


HOOK = StopTool()
