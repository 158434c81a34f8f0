"""What the run has seen and read, from the tool log: the helpers the read policies share."""

from __future__ import annotations

import json

from harness.state import RunState, last_reply, result_text
from harness.tools import LIST_TOOL, READ_TOOL, listed_names
from harness.workspace import normal_name


def question(state: RunState) -> str:
    """The user's own question: the run's first user message."""
    return next((m.get("content") or "" for m in state.messages if m["role"] == "user"), "")


def answered_last(state: RunState) -> bool:
    """The newest message is a reply with text and no call (an answer, for now)."""
    last = last_reply(state)
    if last is None or last[0] != len(state.messages) - 1:
        return False
    message = state.messages[-1]
    return not message.get("tool_calls") and bool((message.get("content") or "").strip())


def answered_before_success(state: RunState, tool: str, offered: set[str], hook: str) -> bool:
    """The newest reply is an answer, ``tool`` is offered and no call of it has succeeded, and
    ``hook`` has not asked yet in this run, nor is the run concluding at a limit: the case in
    which ``read_before_answer`` and ``query_before_answer`` ask for that call."""
    if state.concluding is not None or tool not in offered or state.asked(hook):
        return False
    if not answered_last(state):
        return False
    return not any(run.ok and run.name == tool for run in state.tool_log)


def listed_files(state: RunState) -> list[str]:
    """The files successful list_files calls showed the model, in the order it saw them."""
    names: dict[str, None] = {}
    for run in state.tool_log:
        if run.ok and run.name == LIST_TOOL:
            names.update(dict.fromkeys(listed_names(result_text(state, run.call_id) or "")))
    return list(names)


def read_files(state: RunState) -> set[str]:
    """The files successful read_file calls read, each by its name in the workspace."""
    paths = set()
    for run in state.tool_log:
        if run.ok and run.name == READ_TOOL:
            try:
                path = json.loads(run.arguments or "{}").get("path")
            except (json.JSONDecodeError, RecursionError, AttributeError):
                continue
            if isinstance(path, str):
                paths.add(normal_name(path))
    return paths
