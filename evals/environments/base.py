"""The environment protocol: what a task runs on, seen from the run, the scorer and the
strategies."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from evals.record import EnvironmentData, RunRecord
from evals.tasks import Task
from harness.client import ProviderClient, RetryPolicy
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import RunState, ToolRun, new_run
from harness.tools import Tool
from harness.workspace import Workspace


@dataclass(frozen=True)
class Figures:
    """Figures only one environment's runs have: a run file's summary carries them under
    ``key`` (None when no task of the run ran there) and its Markdown adds a section."""

    key: str  # the summary's key
    heading: str  # the Markdown section's heading
    of: Callable[[Sequence[RunRecord]], dict[str, Any] | None]
    markdown: Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Reading:
    """Everything a task could look at, read by the real loop and tools: the run's state, the
    names as listed, each result by what was asked, and the text of query results a
    question-blind answer may copy from (None where the tools return no results of data)."""

    state: RunState
    listed: list[str]
    contents: dict[str, str]
    results: str | None = None


class Dialogue(Protocol):
    """What an environment that holds its tasks' conversations itself (τ²) gives one: the
    agent's system prompt and the user's prompt as it words them (None: the eval's own), the
    talk to follow as it goes (``heard``: who said it, what), and its own verdict at the end
    (``judge``: rewards by judge name, for ``judged`` checks; raises ``EvalError`` when the
    judge fails, and the run is an error)."""

    @property
    def system(self) -> str | None: ...

    @property
    def user_prompt(self) -> str | None: ...

    @property
    def user_tools(self) -> list[dict[str, Any]]:
        """The user's own tools (OpenAI tools; τ²'s telecom phone), never the agent's."""
        ...

    async def user_call(self, name: str, arguments: dict[str, Any], asked: Any) -> tuple[str, bool]:
        """One of the user's calls, run on the user's side: its result, and if it failed
        (``asked``: where the call stands in its message, ``evals.conversation.Asked``)."""
        ...

    @property
    def ways(self) -> dict[str, Any]:
        """How the environment holds its conversations, as ``evals.conversation.Rules`` names
        them (``greeting``, ``empty_retries``, ``solo``, ``stop_tool``, ``unreadable_fails``)."""
        ...

    def follow(self, state: Any) -> None:
        """The run's state, read by the environment's tools (the words beside a call)."""
        ...

    async def heard(self, role: str, text: str) -> None: ...

    async def gold(self) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
        """The task's gold: the agent's calls (name, arguments) in order, and what it must
        tell the user (what an oracle agent does)."""
        ...

    async def judge(self, run_id: str, termination: str) -> dict[str, float]: ...


class Opened(Protocol):
    """An environment opened for one eval's tasks."""

    def setup(self, task: Task, folder: Path) -> AbstractAsyncContextManager[Setup]:
        """What the task runs with, for as long as the run lasts: its tools, over a workspace
        laid out in ``folder`` (fresh for each task run), and what the system prompt may say of
        it. What the tools need running (an MCP server) is stopped on the way out; what cannot
        be started raises ``harness.errors.ToolServerFailed``, and the task run is an error."""
        ...

    def record(self, task: Task, state: RunState | None) -> EnvironmentData:
        """What the task's run record keeps of this environment (``evals.record.environments``);
        ``state`` is None for a task run that never started."""
        ...

    # Optional: ``dialogue(setup) -> Dialogue`` for an environment that holds its tasks'
    # conversations itself, and ``async aclose()`` for one that keeps a process for the eval.


class Gathering(Protocol):
    """What a workflow's gathering step can do (``evals.solvers.base.Steps`` is one): run the
    code's own calls, ask the model, answer the model's calls, let it pick among names."""

    tools: dict[str, Tool]

    def content(self, run: ToolRun) -> str: ...

    async def run_tools(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[ToolRun]: ...

    async def answer_calls(self) -> list[ToolRun]: ...

    async def ask(self, text: str | None, offer: Sequence[Tool] = ()) -> dict[str, Any]: ...

    async def pick(self, kind: str, names: list[str], text: str) -> list[str]: ...


class Environment(Protocol):
    """An environment, as the registry (``evals.registry``) lists it. Beyond what is declared
    here, one may have:

    * ``data``: the model of what its records keep (``evals.record.Data``; none: its records
      read as ``OtherData``), registered by the registry;
    * ``task_fields``: the models of the fields it adds to its tasks (``evals.tasks.TaskFields``),
      registered by the registry, so its task files load;
    * ``gather(steps, route, repair)``: how a workflow gathers what a task of it holds
      (``evals.solvers``; none: the workflows refuse its tasks, saying so);
    * ``texts``: every text its gathering can put before the model (checked for what must
      never reach it);
    * ``figures``: figures only its runs have (``Figures``), in every summary of a run file
      (``evals.report.figures``);
    * ``sources``: the task sets it can generate (``evals.tasks.sources.Source``), what
      ``loopbench generate --source`` offers (``evals.registry.sources``);
    * ``check_kinds``: check kinds only its tasks use (models with a ``kind`` tag and
      ``passes(run)``, ``evals.tasks.register_check``), and ``judges``: the names its
      ``judged`` checks may give (its dialogue's ``judge`` rewards them);
    * ``false_claims(task, answer)``: its claim rule, each statement of a right answer its
      state contradicts, in words (``evals.scoring.claims``; none: its answers are checked
      for no claim, never against another environment's state);
    * ``settings``: the names of the preset settings only its tasks read (the database's SQL
      row cap and statement timeout), registered by the registry: a record of another
      environment's task does not keep them (``evals.record.preset_used``).
    """

    name: str
    # Every tool this environment can offer: what a call written as text may name.
    tool_names: frozenset[str]
    # The preset its tasks run under unless told otherwise (make eval, make eval-sql).
    default_preset: str

    def holds(self, task: Task) -> bool: ...

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> Opened:
        """Opened once per eval, before its first task runs: what cannot be had fails here.
        ``db``: where the eval's databases are (``--db``; None: built as SQLite files)."""
        ...

    async def read_all(self, task: Task, scratch: Path) -> Reading: ...


def filled(value: Any, workspace: str) -> Any:
    """A call's arguments with ``{workspace}`` in their strings, at any depth, made the run's
    folder (a reading call's, an ``after`` check's)."""
    if isinstance(value, str):
        return value.replace("{workspace}", workspace)
    if isinstance(value, list):
        return [filled(v, workspace) for v in value]
    if isinstance(value, dict):
        return {k: filled(v, workspace) for k, v in value.items()}
    return value


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-reading",
        "object": "chat.completion",
        "model": "reading",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def scripted_provider(
    calls: Sequence[tuple[str, dict[str, Any]]], words: str = ".", closing: str | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    """A provider that makes ``calls`` (tool name, arguments), one a turn, then says ``words``,
    then answers every later message with ``closing`` (None: ``words`` again). What the
    assistant said before the user's first message (τ²'s greeting) is not its own."""

    def handle(request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        first = next((i for i, m in enumerate(messages) if m["role"] == "user"), 0)
        messages = messages[first:]
        made = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        said = sum(1 for m in messages if m["role"] == "assistant" and not m.get("tool_calls"))
        if made < len(calls):
            name, arguments = calls[made]
            call = {"name": name, "arguments": json.dumps(arguments)}
            tool_call = {"id": f"c{made + 1}", "type": "function", "function": call}
            message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        else:
            text = words if said == 0 or closing is None else closing
            message = {"role": "assistant", "content": text}
        return httpx.Response(200, json=_completion(message))

    return handle


async def scripted_calls(
    question: str,
    calls: list[tuple[str, dict[str, Any]]],
    tools: list[Tool],
    workspace: Workspace,
) -> tuple[RunState, list[str]]:
    """The real loop and ``tools``, driven by a provider that makes exactly ``calls``: the
    state, and each call's result in order."""
    state = new_run("reading", question)
    transport = httpx.MockTransport(scripted_provider(calls))
    retry = RetryPolicy(max_retries=0, base_delay_s=0.0, max_delay_s=0.0)
    config = LoopConfig(max_turns=len(calls) + 3)
    async with ProviderClient("http://reading.invalid/v1", retry=retry, transport=transport) as c:
        await run_loop(state, c, Setup(tools, workspace), config)
    results = {m.get("tool_call_id"): str(m.get("content")) for m in state.messages}
    return state, [results.get(f"c{i + 1}", "") for i in range(len(calls))]
