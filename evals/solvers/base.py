"""The solver protocol, and the steps a workflow is made of: tool calls the code makes, and
model calls it asks, each recorded as the agent loop records its own."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import harness.hooks as hooks
from evals.environments import Environment
from evals.tasks import Task
from harness.cancel import CancelToken
from harness.client import ChatClient
from harness.config import LoopConfig
from harness.execute import Stop, answer_pending
from harness.loop import framed, limit_reached, stop, stopped_by
from harness.replies import record_turn
from harness.setup import Setup
from harness.state import RunState, ToolRun
from harness.tools import Tool, ToolContext
from harness.trace import Recorder

# A workflow's system prompt where the environment gives no intro (a workspace of files).
SYSTEM = (
    "You answer a user's question about a workspace of files. They are listed and read for "
    "you; answer from what they say."
)


@dataclass(frozen=True)
class TaskRun:
    """What a solver is given for one task: the task and the environment it runs on, the
    run's state and client, what the environment set up (its tools over the run's
    workspace), the loop's settings and the recorder."""

    task: Task
    environment: Environment
    state: RunState
    client: ChatClient
    setup: Setup
    config: LoopConfig
    recorder: Recorder


class Solver(Protocol):
    name: str
    help: str
    # What the solver fixes beyond its name (a vote's samples and temperature...): recorded.
    settings: dict[str, Any]

    async def solve(self, run: TaskRun) -> RunState: ...


class WorkflowStop(Exception):
    """The run ends before the workflow's last step: a limit, or a tool error the tool-error
    setting ends the run on."""

    def __init__(self, outcome: Stop) -> None:
        super().__init__(outcome.status)
        self.outcome = outcome


@dataclass
class Steps:
    """One workflow run's steps over ``run.state``: what the code calls, what it asks."""

    run: TaskRun
    token: CancelToken
    # The environment's tools, and the ones the workflow offers as it goes.
    tools: dict[str, Tool] = field(init=False)

    def __post_init__(self) -> None:
        self.tools = {t.name: t for t in self.run.setup.tools}

    @property
    def task(self) -> Task:
        return self.run.task

    @property
    def state(self) -> RunState:
        return self.run.state

    @property
    def config(self) -> LoopConfig:
        return self.run.config

    def content(self, run: ToolRun) -> str:
        """What the transcript holds for ``run``."""
        return next(
            str(m.get("content") or "")
            for m in reversed(self.state.messages)
            if m["role"] == "tool" and m.get("tool_call_id") == run.call_id
        )

    async def run_tools(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[ToolRun]:
        """The code's calls, one assistant message of them, answered by the real tools as the
        loop answers a model's: their results enter the transcript and the tool log."""
        first = len(self.state.tool_log)
        tool_calls = [
            {
                "id": f"code-{first + i + 1}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ]
        self.state.messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        self.state.meta.setdefault("code_calls", []).extend(c["id"] for c in tool_calls)
        return await self.answer_calls()

    async def answer_calls(self) -> list[ToolRun]:
        """Answer the calls of the last assistant message (the code's, or the model's)."""
        first = len(self.state.tool_log)
        run = self.run
        outcome = await answer_pending(
            run.state, self.tools, run.setup.workspace, run.config, run.recorder, self.token
        )
        if outcome is not None:
            raise WorkflowStop(outcome)
        return self.state.tool_log[first:]

    async def ask(
        self,
        text: str | None,
        offer: Sequence[Tool] = (),
        temperature: float | None = None,
        seed: int | None = None,
        prefix: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """One model call: ``text`` as the user's message (None: none), ``offer`` the tools it
        must call one of (none: it answers in words). ``prefix``: the messages to send instead
        of the transcript (a vote's samples share one)."""
        if text is not None:
            self.state.messages.append({"role": "user", "content": text})
        if limit := limit_reached(self.state, self.config):
            raise WorkflowStop(Stop(*limit))
        for tool in offer:
            self.tools.setdefault(tool.name, tool)
        _, options = hooks.plan_turn(self.state, self.config, [])
        options = replace(
            options,
            tool_choice="required" if offer else None,
            parallel_tool_calls=False if offer else None,
            temperature=temperature if temperature is not None else options.temperature,
            seed=seed if seed is not None else options.seed,
        )
        specs = [t.spec() for t in offer]
        messages = prefix if prefix is not None else self.state.messages
        reply = await self.run.client.chat(self.state.model, messages, specs, self.token, options)
        record_turn(self.state, reply, self.config.prices, self.run.recorder)
        return reply.message

    async def pick(self, kind: str, names: list[str], text: str) -> list[str]:
        """The names the model picks among ``names`` (the call grammar holds it to them); every
        name where it picks none it may have."""
        if not names:
            return []
        reply = await self.ask(text, offer=[pick_tool(kind, names)])
        if reply.get("tool_calls"):
            await self.answer_calls()
        chosen = arguments_of(reply).get("names")
        picked = [n for n in names if isinstance(chosen, list) and n in chosen]
        return picked or names


def said(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")


def arguments_of(message: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the first call a reply makes ({} when it makes none or they are not
    an object)."""
    calls = message.get("tool_calls") or []
    if not calls:
        return {}
    try:
        value = json.loads(calls[0]["function"].get("arguments") or "{}")
    except (json.JSONDecodeError, RecursionError, KeyError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def noted(name: str, description: str, parameters: dict[str, Any], reply: str) -> Tool:
    """A tool the workflow offers the model to state a choice in a form the server's call
    grammar holds to; its call is answered with ``reply``."""

    async def note(args: dict[str, Any], ctx: ToolContext) -> str:
        return reply

    return Tool(name, description, parameters, note, read_only=True)


def pick_tool(kind: str, names: list[str]) -> Tool:
    """The tool a workflow offers to pick some of ``names`` (of ``kind``: files, tables)."""
    parameters = {
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "items": {"type": "string", "enum": names},
                "minItems": 1,
                "uniqueItems": True,
            }
        },
        "required": ["names"],
        "additionalProperties": False,
    }
    return noted(f"choose_{kind}", f"Name the {kind} to read.", parameters, "Noted.")


Flow = Callable[[Steps], Awaitable[str]]


async def run_workflow(flow: Flow, run: TaskRun) -> RunState:
    """Run ``flow`` over ``run.state`` to its answer, in the loop's frame (its limits, timeout
    and exits), so the state records why it stopped as the loop's does."""
    state, recorder = run.state, run.recorder
    if not any(m["role"] in ("system", "assistant") for m in state.messages):
        state.messages.insert(0, {"role": "system", "content": run.setup.intro or SYSTEM})

    async def body(token: CancelToken) -> RunState:
        try:
            state.answer = await flow(Steps(run, token))
        except WorkflowStop as ended:
            return stopped_by(state, recorder, ended.outcome, token)
        return stop(state, recorder, "completed")

    return await framed(state, run.config, recorder, None, body)


class Workflow:
    """A solver made of one flow, fixed in code; what differs by environment (how evidence is
    gathered) the flow asks of :func:`evals.solvers.gather.gather`."""

    def __init__(
        self, name: str, help: str, flow: Flow, settings: dict[str, Any] | None = None
    ) -> None:
        self.name, self.help, self.flow = name, help, flow
        self.settings = settings or {}

    async def solve(self, run: TaskRun) -> RunState:
        return await run_workflow(self.flow, run)
