"""τ²-bench's domains as an environment: a task names one of τ²'s tasks (``tau2``); its run is
a conversation (``evals.conversation``) whose tools, agent system prompt, user prompt and
verdict are τ²'s own, served by τ²'s package in its own virtualenv behind a pipe
(``evals.tau2``).

Each task run opens a fresh τ² environment in the task's initial state; the agent's calls run
there (a call τ² refuses comes back as a tool error the model reads); every message joins τ²'s
trajectory; at the end τ²'s evaluator replays the trajectory and judges it. An evaluator that
raises (a replay that does not match, a failure of its own) is the machinery's fault: the run
is an error, never a 0. The user's tools (telecom's phone) stay on the user's side: the agent
is never offered them, except alone (``solo``), where τ² hands them to the agent.

A task is held in its ``tau2.mode``: a conversation with the user, solo, or with the task's
resolution steps (``gt``); the agent's system prompt and tools are those τ²'s agent of that
mode is built with, and its trajectory is judged as τ² judges that mode's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.environments.base import Reading
from evals.errors import EvalError
from evals.pipe import PipeFailed
from evals.tasks import Task
from evals.tau2.bridge import Tau2
from evals.tau2.data import Tau2Data
from evals.tau2.fields import Tau2Ref
from harness.errors import ToolError, ToolServerFailed
from harness.setup import Setup
from harness.state import RunState
from harness.tools import Tool, ToolContext
from harness.workspace import create_workspace


def _ref(task: Task) -> Tau2Ref:
    ref = task.fields_of(Tau2Ref)
    if ref is None:
        raise EvalError(f"task {task.id} names no tau2 task")
    return ref


# τ²'s ``generate`` asks again for a reply with neither words nor a call, three times.
EMPTY_RETRIES = 3
# τ²'s solo agent ends its run by calling this tool (``LLMSoloAgent.STOP_FUNCTION_NAME``).
STOP_TOOL = "done"


class JudgeFailed(EvalError):
    """τ²'s evaluator raised on a finished conversation: the run is an error."""


def _beside(state: RunState | None, call_id: str) -> tuple[str, str | None]:
    """The message a call of the agent belongs to: its id (its first call's) and the words
    written beside its calls, as τ²'s trajectory keeps them."""
    for message in reversed(state.messages if state is not None else []):
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        if any(c.get("id") == call_id for c in calls):
            content = message.get("content")
            return str(calls[0].get("id")), content if isinstance(content, str) else None
    return call_id, None


def _proxy(talk: _Talk, name: str, description: str, parameters: dict[str, Any]) -> Tool:
    """One of τ²'s tools as the loop's: each call executed in the conversation's τ²
    environment, in the order the agent asked for them (τ²'s orchestrator runs a message's
    calls so); a name τ² has no tool for is sent as well, and τ² answers it (``Error: Tool
    '...' not found.``) and keeps it in its trajectory, as its runner does."""

    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        message, content = _beside(talk.state, ctx.call_id)
        try:
            result, failed = await talk.worker.call(
                talk.key, name, args, "assistant", ctx.call_id, message, content
            )
        except EvalError as exc:  # the worker, not the tool: the run is an error
            raise ToolServerFailed(f"tau2's worker failed on {name}: {exc}") from exc
        if failed:  # τ²'s own words ("Error: ..."), read as τ²'s agent reads them
            raise ToolError(result.removeprefix("Error: "))
        return result

    return Tool(
        name,
        description,
        parameters,
        call,
        read_only=False,  # τ²'s tools change its database; none is served from a cache
        needs_approval=False,  # the domain's policy is the agent's to follow
        # A call past the tool time limit: the worker is stuck (and is stopped), not the
        # tool's answer; the run is an error.
        hang_is_fault=True,
        in_order=True,
        # τ²'s environment runs a call as its runner sends it and words what fails.
        judges_arguments=True,
    )


def _unknown(talk: _Talk, name: str) -> Tool:
    return _proxy(talk, name, "", {"type": "object"})


def _proxies(talk: _Talk, specs: list[dict[str, Any]]) -> list[Tool]:
    """τ²'s tools as the loop's (``_proxy``)."""
    return [
        _proxy(
            talk,
            spec["function"]["name"],
            spec["function"].get("description", ""),
            spec["function"].get("parameters") or {"type": "object", "properties": {}},
        )
        for spec in specs
    ]


@dataclass
class _Talk:
    """One conversation in flight: the worker that holds it, its key there, what τ² opened
    it with, and the run's state once the conversation starts."""

    worker: Tau2
    task: Task
    key: str
    mode: str
    system: str
    user_prompt: str
    user_tools: list[dict[str, Any]]
    state: RunState | None = None


class Tau2Dialogue:
    """What the run's conversation takes from τ² (``evals.run.taskrun``): the agent's system
    prompt, the user's prompt, the trajectory to follow and the verdict."""

    def __init__(self, opened: _Opened, talk: _Talk) -> None:
        self._opened, self._talk = opened, talk

    @property
    def system(self) -> str:
        return self._talk.system

    @property
    def user_prompt(self) -> str:
        return self._talk.user_prompt

    @property
    def user_tools(self) -> list[dict[str, Any]]:
        return self._talk.user_tools

    @property
    def ways(self) -> dict[str, Any]:
        """τ²'s orchestrator's: its greeting opens the agent's history (not solo's), an empty
        reply is asked again three times (τ²'s ``generate``), a call whose arguments are no
        JSON object fails the conversation (τ²'s ``generate`` reads them so), the solo agent
        ends with ``done``."""
        solo = self._talk.mode == "solo"
        return {"greeting": not solo, "empty_retries": EMPTY_RETRIES, "solo": solo,
                "stop_tool": STOP_TOOL if solo else "", "unreadable_fails": True}  # fmt: skip

    def follow(self, state: RunState) -> None:
        self._talk.state = state

    async def user_call(self, name: str, arguments: dict[str, Any], asked: Any) -> tuple[str, bool]:
        return await self._talk.worker.call(
            self._talk.key, name, arguments, "user", asked.call_id, asked.message, asked.content
        )

    async def gold(self) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
        try:
            found = await self._talk.worker.gold(self._talk.key)
        except PipeFailed:
            raise
        except EvalError as exc:  # the worker's own failure to say it: the machinery's
            raise PipeFailed(f"tau2's worker could not give the task's gold: {exc}") from exc
        calls = [(str(name), dict(arguments)) for name, arguments in found["actions"]]
        return calls, [str(c) for c in found["communicate"]]

    async def heard(self, role: str, text: str) -> None:
        await self._talk.worker.say(self._talk.key, role, text)

    async def judge(self, run_id: str, termination: str) -> dict[str, float]:
        """τ²'s evaluator on the finished conversation; its reward and parts are kept for the
        record. Raises :class:`JudgeFailed` when it raises."""
        try:
            judged = await self._talk.worker.evaluate(self._talk.key, termination)
        except EvalError as exc:
            raise JudgeFailed(f"tau2's evaluator failed: {exc}") from exc
        self._opened.verdicts[run_id] = (float(judged["reward"]), dict(judged["info"]))
        return {"tau2": float(judged["reward"])}


class _Opened:
    def __init__(self) -> None:
        self._tau2: Tau2 | None = None
        self._lock = asyncio.Lock()
        self._talks: dict[Path, _Talk] = {}
        self.verdicts: dict[str, tuple[float, dict[str, Any]]] = {}
        self.version: str | None = None

    async def _started(self) -> Tau2:
        """The eval's worker, started anew when the last one died (its conversations are
        errors; the next ones run on the new one)."""
        async with self._lock:
            if self._tau2 is not None and self._tau2.dead is not None:
                await self._tau2.aclose()
                self._tau2 = None
            if self._tau2 is None:
                tau2 = Tau2()
                await tau2.start()
                self._tau2 = tau2
                self.version = tau2.version
            return self._tau2

    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        ref = _ref(task)
        try:
            tau2 = await self._started()
            key = str(folder)
            opened = await tau2.open(key, ref.domain, ref.task, ref.mode)
        except EvalError as exc:  # the machinery's: the run is an error, the eval goes on
            raise ToolServerFailed(f"tau2 could not open the task: {exc}") from exc
        try:
            workspace = create_workspace(folder, files={})
            talk = _Talk(
                tau2, task, key, ref.mode, opened["system"], opened["user_prompt"],
                opened["user_tools"],
            )  # fmt: skip
            tools = _proxies(talk, opened["tools"])
            self._talks[workspace.root] = talk
            try:
                # τ²'s own system prompt goes as it is: the loop writes none of its own.
                # A call by a name τ² has no tool for goes to τ² too, as its runner sends it.
                unknown = functools.partial(_unknown, talk)
                yield Setup(tools, workspace, system_prompt=False, unknown=unknown)
            finally:
                self._talks.pop(workspace.root, None)
        finally:
            await _let_go(tau2, key)

    def dialogue(self, setup: Setup) -> Tau2Dialogue:
        return Tau2Dialogue(self, self._talks[setup.workspace.root])

    def record(self, task: Task, state: RunState | None) -> Tau2Data:
        ref = _ref(task)
        reward, info = (None, None)
        if state is not None and state.run_id in self.verdicts:
            reward, info = self.verdicts[state.run_id]
        return Tau2Data(
            domain=ref.domain,
            task=ref.task,
            tau2_version=self.version,
            reward=reward,
            reward_info=info,
        )

    async def aclose(self) -> None:
        if self._tau2 is not None:
            await self._tau2.aclose()
            self._tau2 = None


async def _let_go(tau2: Tau2, key: str) -> None:
    """The conversation's environment closed in the worker, whatever ended the run; a worker
    that is gone holds nothing, and one that cannot answer now is stopped by its pipe."""
    if tau2.dead is not None:
        return
    with contextlib.suppress(EvalError):
        await tau2.close(key)


class Tau2Environment:
    name = "tau2"
    # τ²'s tools are its domains' (read from its package when a task opens).
    tool_names: frozenset[str] = frozenset()
    judges = ("tau2",)  # judged checks' by: τ²'s evaluator
    data = Tau2Data  # its domain and task, τ²'s version, and the reward with its parts
    task_fields = (Tau2Ref,)  # which of τ²'s tasks a task is, under its ``tau2`` key
    default_preset = "no-helpers"  # τ²'s agent: its own prompt, nothing of ours added

    def holds(self, task: Task) -> bool:
        return task.fields_of(Tau2Ref) is not None

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _Opened:
        for task in tasks:
            if task.user is None:
                raise EvalError(f"tau2 task {task.id} has no user: a tau2 task is a conversation")
        return _Opened()

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        raise EvalError("a tau2 task has no question-blind reading: its facts are τ²'s database")
