"""``submit``: a tool whose argument is the answer; the run completes when it is called."""

from __future__ import annotations

import json
from typing import Any

from harness.policies.base import Config, Hook, Prompt, Setting
from harness.state import RunState, last_reply
from harness.tools import Tool, ToolContext

SUBMIT = "submit"
FINISH = " When you know the answer, call submit with it, in one or two sentences."

SUBMIT_ON: Setting[bool] = Setting(
    "submit",
    False,
    "offer submit(answer)",
    "bool",
    doc=(
        "offer `submit(answer)`: the run completes on it with that answer (a plain-text answer "
        "still completes the run)"
    ),
)


async def _submit(args: dict[str, Any], _: ToolContext) -> str:
    # Never reached for a valid call (``answer`` ends the run first); kept so the tool has a
    # body like every other.
    return str(args.get("answer", ""))


def submit_tool() -> Tool:
    return Tool(
        SUBMIT,
        "Give your final answer to the user. Call it once, when you know the answer.",
        {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The final answer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        _submit,
        read_only=True,
    )


def submitted_answer(state: RunState) -> str | None:
    """The answer, when the newest reply called ``submit`` with a text argument."""
    last = last_reply(state)
    if last is None:
        return None
    for call in state.messages[last[0]].get("tool_calls") or []:
        function = call.get("function") or {}
        if function.get("name") != SUBMIT:
            continue
        try:
            answer = json.loads(function.get("arguments") or "{}").get("answer")
        except (json.JSONDecodeError, RecursionError, AttributeError):
            continue
        if isinstance(answer, str):
            return answer
    return None


class Submit(Hook):
    name = "submit"
    settings = (SUBMIT_ON,)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        if SUBMIT_ON.of(config):
            prompt.finish = FINISH

    def offer(self, config: Config, tools: list[Tool], declared: list[str] | None) -> list[Tool]:
        return [*tools, submit_tool()] if SUBMIT_ON.of(config) else tools

    def answer(self, state: RunState, config: Config) -> str | None:
        return submitted_answer(state) if SUBMIT_ON.of(config) else None


HOOK = Submit()
