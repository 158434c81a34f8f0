"""Scorers: each check of a task, applied to a finished run.

A verdict is evidence about a model only when the scorer refuses what is not an answer, so two
rules hold for every check:

* The answer is what the model *stated*: a tool call written as text (a JSON object naming a
  tool, with or without a ``<tool_call>`` tag or fence around it) is not part of it, and
  neither is a tool result written as text (a ``<tool_response>`` block).
* A typed answer is credited when it commits to the expected candidate and to no competing
  one (:mod:`evals.scoring.answers`).
* Evidence is a result the run *received*: a call that succeeded. A refused, failed or
  declined call is never evidence, and neither is a copy of a failure served again by the
  repeated-call guard; a successful call is evidence even when an identical earlier one
  failed. The rule is read from the transcript, so runs recorded before the loop marked those
  copies as failures score the same as runs recorded after.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

import evals.scoring.answers as answers
from evals.registry import tool_names
from evals.tasks import Check, Task, TypedAnswer
from evals.tasks.checks import after_key
from harness.policies.submit import submit_tool
from harness.state import RunState, ToolRun, signature
from harness.workspace import normal_name
from serve_local.public import CALL_HEAD, call_spans

# What is left of a call's wrapping once the call is cut out: tags, fences, stray braces.
_WRAPPING = re.compile(r"</?tool_call>|```(?:json)?|^[\s{}\[\],]+$", re.MULTILINE)
# A tool result written into the answer (the chat template's tag for one): the model copying
# or inventing a tool's output has not stated it. An unclosed block runs to the end.
_RESULT_AS_TEXT = re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL)


def offerable_tools() -> set[str]:
    """Every tool a run can be offered, submit included: what a call written as text names."""
    return set(tool_names()) | {submit_tool().name}


def _gives_arguments(value: dict[str, Any]) -> bool:
    """A call of any name: it gives the tool its arguments, as a call does."""
    function = value.get("function")
    called = function if isinstance(function, dict) else value
    return "arguments" in called or "parameters" in called


def stated(answer: str | None) -> str:
    """The answer without the tool calls written into it as text (``serve_local.callshape``'s
    definition: a call of a tool a run can be offered, or of any name with its arguments; and
    a call cut off at the end) and without tool results written into it (``<tool_response>``
    blocks)."""
    text = _RESULT_AS_TEXT.sub("", answer or "")
    kept, position = [], 0
    offered = offerable_tools()
    for span in call_spans(text):
        if span.name not in offered and not _gives_arguments(span.value):
            continue  # {"name": "Alice"} is data, not a call
        kept.append(text[position : span.start])
        position = max(position, span.end)
    kept.append(text[position:])
    return _WRAPPING.sub("", _cut_call("".join(kept))).strip()


def _cut_call(text: str) -> str:
    """Without a call cut off at the end (its head written, its object never closed)."""
    heads = list(CALL_HEAD.finditer(text))
    if heads:
        tail = text[heads[-1].start() :]
        if tail.count("{") > tail.count("}"):
            return text[: heads[-1].start()]
    return text


@dataclass(frozen=True)
class Received:
    """A tool result the model read from a call that succeeded."""

    name: str
    arguments: dict[str, Any]
    content: str


def _arguments(run: ToolRun) -> dict[str, Any] | None:
    try:
        value = json.loads(run.arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _copied(run: ToolRun, earlier: list[ToolRun], contents: dict[Any, str]) -> ToolRun | None:
    """The earlier call a cached answer copies: the first with the same result text (the
    dedupe cache serves a success, the repeat guard a failure), else the latest one."""
    same = [r for r in earlier if contents.get(r.call_id) == contents.get(run.call_id)]
    return same[0] if same else (earlier[-1] if earlier else None)


def received(state: RunState) -> list[Received]:
    """Every tool result of the run that is evidence, in the order the model read them."""
    contents = {
        m.get("tool_call_id"): str(m.get("content") or "")
        for m in state.messages
        if m["role"] == "tool"
    }
    answered: dict[str, list[ToolRun]] = {}  # signature -> the calls a tool answered itself
    found = []
    for run in state.tool_log:
        key = signature(run.name, run.arguments)
        original = _copied(run, answered.get(key, []), contents) if run.cached else run
        if not run.cached:
            answered.setdefault(key, []).append(run)
        declined = run.key in state.rejected
        if not run.ok or declined or original is None or not original.ok:
            continue
        arguments = _arguments(run)
        if arguments is None or run.call_id not in contents:
            continue
        found.append(Received(run.name, arguments, contents[run.call_id]))
    return found


# What a file tool says, in its own error, when the file it was asked for is not there: ours
# ("no such file: x"), Node's filesystem server ("ENOENT: no such file or directory").
_NOT_THERE = re.compile(r"no such file|ENOENT", re.IGNORECASE)
# The folder a task's files sit in where a server is given an absolute path to it
# (``evals.mcp.environment``): a path names a file of the task's folder when it is the file's
# bare name or that folder's path followed by it.
_TASK_FOLDER = "workspace"


@dataclass(frozen=True)
class Failed:
    """A call the tool itself ran and answered with an error: what it said."""

    name: str
    arguments: dict[str, Any]
    error: str


def failed(state: RunState) -> list[Failed]:
    """Every call of the run that a tool ran and answered with an error of its own: not one
    refused before it ran, declined, a copy served again, a bug of the tool, or one whose
    arguments failed its schema."""
    found = []
    for run in state.tool_log:
        declined = run.key in state.rejected
        if run.ok or not run.ran or run.cached or run.bug or run.invalid or declined:
            continue
        arguments = _arguments(run)
        if arguments is not None:
            found.append(Failed(run.name, arguments, run.error or ""))
    return found


def names_file(path: Any, name: str) -> bool:
    """Whether the ``path`` argument of a call names the file ``name`` of the task's folder:
    the bare name (``./name`` too), or the folder's absolute path followed by it (a folder
    named ``workspace`` that is not itself inside one: ``…/workspace/workspace/name`` names a
    file of a folder that is not there)."""
    if not isinstance(path, str) or not path:
        return False
    if normal_name(path) == normal_name(name):
        return True
    parts = PurePosixPath(posixpath.normpath(path))
    return (
        parts.is_absolute()
        and parts.name == name
        and parts.parent.name == _TASK_FOLDER
        and parts.parent.parent.name != _TASK_FOLDER
    )


def _matches(given: dict[str, Any], wanted: dict[str, Any]) -> bool:
    for name, value in wanted.items():
        have = given.get(name)
        if isinstance(value, str) and isinstance(have, str):
            if normal_name(have) != normal_name(value):
                return False
        elif have != value:
            return False
    return True


def files_read(state: RunState) -> set[str]:
    """Files for which ``read_file`` returned their content."""
    return _files_in(received(state))


def _files_in(found: list[Received]) -> set[str]:
    return {
        normal_name(str(r.arguments.get("path", "")))
        for r in found
        if r.name == "read_file" and isinstance(r.arguments.get("path"), str)
    }


def _called(state: RunState, name: str, arguments: dict[str, Any] | None) -> bool:
    for run in state.tool_log:
        if run.name != name:
            continue
        given = _arguments(run)
        if arguments is None or (given is not None and _matches(given, arguments)):
            return True
    return False


@dataclass
class RunEvidence:
    """What a finished run shows its checks (:class:`evals.tasks.Evidence`), read from its
    state: the answer it stated, and only the tool results it received as evidence. Both are
    read once, however many checks ask (the run is over: its state no longer changes)."""

    state: RunState
    # What an environment's own judge gave the run, by judge (``evals.tasks.Judged``).
    verdicts: Mapping[str, float] = field(default_factory=dict)
    # Results of the calls made once the run was over, by ``after_key`` (``evals.tasks.After``).
    after: Mapping[str, str] = field(default_factory=dict)

    def judged(self, by: str) -> float | None:
        return self.verdicts.get(by)

    def afterwards(self, tool: str, arguments: dict[str, Any]) -> str | None:
        return self.after.get(after_key(tool, arguments))

    @cached_property
    def answer(self) -> str:
        return stated(self.state.answer)

    @cached_property
    def received(self) -> list[Received]:
        return received(self.state)

    @property
    def status(self) -> str:
        return self.state.status

    @cached_property
    def failed(self) -> list[Failed]:
        return failed(self.state)

    def files_read(self) -> set[str]:
        return _files_in(self.received)

    def reads_of(self, tools: list[str], name: str) -> set[bool]:
        shown = {
            True
            for r in self.received
            if r.name in tools and names_file(r.arguments.get("path"), name)
        }
        for f in self.failed:
            named = f.name in tools and names_file(f.arguments.get("path"), name)
            if named and _NOT_THERE.search(f.error):
                shown.add(False)
        return shown

    def observed(self, tool: str, arguments: dict[str, Any], result_contains: list[str]) -> bool:
        return any(
            r.name == tool
            and _matches(r.arguments, arguments)
            and all(s.lower() in r.content.lower() for s in result_contains)
            for r in self.received
        )

    def called(self, name: str, arguments: dict[str, Any] | None) -> bool:
        return _called(self.state, name, arguments)

    def results(self, tool: str | None) -> list[str]:
        return [r.content for r in self.received if tool is None or r.name == tool]

    def credits(self, answer: TypedAnswer) -> bool:
        return answers.credits(answer, self.answer)


def check_passes(
    check: Check, state: RunState, verdicts: Mapping[str, float] | None = None
) -> bool:
    """Whether ``check`` passes on the finished run ``state``; the logic is the check kind's
    own (``evals.tasks.checks``)."""
    return check.passes(RunEvidence(state, verdicts or {}))


def describe(check: Check) -> str:
    fields = check.model_dump(exclude={"kind"}, exclude_none=True)
    return f"{check.kind} {json.dumps(fields, ensure_ascii=False)}"


def score(
    task: Task,
    state: RunState,
    verdicts: Mapping[str, float] | None = None,
    after: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Each of ``task``'s checks on the finished run; ``verdicts``: what an environment's own
    judge gave it (a ``judged`` check reads it); ``after``: the results of the calls its
    ``after`` checks made once the run was over."""
    evidence = RunEvidence(state, verdicts or {}, after or {})
    return [
        {"check": describe(c), "kind": c.kind, "passed": c.passes(evidence)} for c in task.checks
    ]
