"""Scorers: each check of a task, applied to a finished run."""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

from evals.tasks import (
    Check,
    Contains,
    ContainsAny,
    FilesRead,
    NotContains,
    Regex,
    StatusIs,
    Task,
    ToolCalled,
)
from harness.state import RunState


def files_read(state: RunState) -> set[str]:
    """Files for which ``read_file`` returned content (not an error)."""
    names: set[str] = set()
    for run in state.tool_log:
        if run.name != "read_file" or not run.ok:
            continue
        try:
            path = json.loads(run.arguments).get("path", "")
        except (json.JSONDecodeError, AttributeError):
            continue
        names.add(PurePosixPath(str(path)).name)
    return names


def _called(state: RunState, name: str, arguments: dict[str, Any] | None) -> bool:
    for run in state.tool_log:
        if run.name != name:
            continue
        if arguments is None:
            return True
        try:
            given = json.loads(run.arguments)
        except json.JSONDecodeError:
            continue
        if isinstance(given, dict) and all(given.get(k) == v for k, v in arguments.items()):
            return True
    return False


def check_passes(check: Check, state: RunState) -> bool:
    answer = (state.answer or "").lower()
    match check:
        case Contains(value=value):
            return value.lower() in answer
        case ContainsAny(values=values):
            return any(v.lower() in answer for v in values)
        case NotContains(values=values):
            return not any(v.lower() in answer for v in values)
        case Regex(pattern=pattern):
            return re.search(pattern, state.answer or "", re.IGNORECASE) is not None
        case FilesRead(files=files, exact=exact):
            read = files_read(state)
            return read == set(files) if exact else set(files) <= read
        case ToolCalled(name=name, arguments=arguments):
            return _called(state, name, arguments)
        case StatusIs(value=value):
            return state.status == value
    raise AssertionError(f"unhandled check {check!r}")


def describe(check: Check) -> str:
    fields = check.model_dump(exclude={"kind"}, exclude_none=True)
    return f"{check.kind} {json.dumps(fields, ensure_ascii=False)}"


def score(task: Task, state: RunState) -> list[dict[str, Any]]:
    return [
        {"check": describe(c), "kind": c.kind, "passed": check_passes(c, state)}
        for c in task.checks
    ]
