"""One tau2 conversation: our agent loop on one side, a user on the other, tau2's environment
executing the tools and tau2's evaluator judging the end.

The user opens; the agent (``harness.loop.run_loop``, every control of the loop applying) works
with the domain's tools until it answers in words; the user reads that and replies; and so on
until the user ends it (one of tau2's stop words), the agent's loop stops, or the step cap is
reached. Each agent call runs in tau2's environment (its result, or its error, is what the
model reads); every message joins tau2's trajectory, which tau2's own evaluator replays and
judges. End reasons are typed (:class:`End`), each mapped to tau2's own termination reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from evals.tau2.bridge import Tau2
from harness.client import ChatClient, TurnOptions
from harness.config import LoopConfig
from harness.errors import ToolError
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import RunState
from harness.tools import Tool, ToolContext
from harness.trace import Recorder
from harness.workspace import create_workspace

# tau2's user simulator ends a conversation by writing one of these.
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"


class End(StrEnum):
    """Why a conversation ended."""

    USER_STOP = "user_stop"
    TRANSFER = "transfer"
    OUT_OF_SCOPE = "out_of_scope"
    AGENT_STOP = "agent_stop"  # the agent's loop ended without an answer (a cap, a budget)
    STEP_CAP = "step_cap"
    ERROR = "error"  # the machinery failed: a provider, tau2's environment, the user model

    @property
    def tau2(self) -> str:
        """tau2's termination reason for this end."""
        return {
            End.USER_STOP: "user_stop",
            End.TRANSFER: "user_stop",
            End.OUT_OF_SCOPE: "user_stop",
            End.AGENT_STOP: "agent_stop",
            End.STEP_CAP: "max_steps",
            End.ERROR: "agent_error",
        }[self]


def user_end(text: str) -> End | None:
    """The end a user's message asks for, if any."""
    for word, end in ((STOP, End.USER_STOP), (TRANSFER, End.TRANSFER),
                      (OUT_OF_SCOPE, End.OUT_OF_SCOPE)):  # fmt: skip
        if word in text:
            return end
    return None


class User(Protocol):
    """The user's side: the conversation's first message, then a reply to each of the agent's
    answers (the conversation so far, from the user's side: its own messages and the agent's
    words)."""

    async def reply(self, said: Sequence[dict[str, str]]) -> str: ...


@dataclass
class ScriptedUser:
    """A user whose messages are given: the n-th reply is ``messages[n]``, then a stop."""

    messages: list[str]
    said: int = 0

    async def reply(self, _: Sequence[dict[str, str]]) -> str:
        self.said += 1
        return self.messages[self.said - 1] if self.said <= len(self.messages) else STOP


# What the user model reads first, as tau2's orchestrator has the agent open.
GREETING = "Hi! How can I help you today?"


@dataclass
class ModelUser:
    """A user played by any OpenAI-shaped model, prompted as tau2 prompts its user simulator
    (``prompt``: its guidelines and the task's scenario). The model sees the conversation from
    the user's side: the agent's words are what it is told, its own are what it said."""

    client: ChatClient
    model: str
    prompt: str
    temperature: float | None = None
    seed: int | None = None

    async def reply(self, said: Sequence[dict[str, str]]) -> str:
        flipped = {"user": "assistant", "assistant": "user"}
        messages = [
            {"role": "system", "content": self.prompt},
            {"role": "user", "content": GREETING},
            *({"role": flipped[m["role"]], "content": m["content"]} for m in said),
        ]
        options = TurnOptions(temperature=self.temperature, seed=self.seed)
        reply = await self.client.chat(self.model, messages, [], options=options)
        return str(reply.message.get("content") or "")


@dataclass
class Outcome:
    end: End
    reward: float | None  # None when the machinery failed (an error, never a 0)
    reward_info: dict[str, Any] = field(default_factory=dict)
    user_turns: int = 0
    state: RunState | None = None
    error: str | None = None


def _proxies(tau2: Tau2, key: str, specs: list[dict[str, Any]]) -> list[Tool]:
    """The domain's tools as the loop's, each call executed in tau2's environment."""

    def proxy(name: str) -> Callable[[dict[str, Any], ToolContext], Awaitable[str]]:
        async def call(args: dict[str, Any], _: ToolContext) -> str:
            content, failed = await tau2.call(key, name, args)
            if failed:
                raise ToolError(content)
            return content

        return call

    return [
        Tool(
            spec["function"]["name"],
            spec["function"].get("description", ""),
            spec["function"].get("parameters") or {"type": "object", "properties": {}},
            proxy(spec["function"]["name"]),
            read_only=False,  # tau2's tools change its database; none is served from a cache
            needs_approval=False,  # the domain's policy is the agent's to follow
        )
        for spec in specs
    ]


async def converse(
    tau2: Tau2,
    key: str,
    domain: str,
    task: str,
    client: ChatClient,
    model: str,
    user: User,
    scratch: Path,
    config: LoopConfig | None = None,
    max_steps: int = 30,
    recorder: Recorder | None = None,
) -> Outcome:
    """One conversation of ``task``, to its end and tau2's verdict on it."""
    opened = await tau2.open(key, domain, task)
    tools = _proxies(tau2, key, opened["tools"])
    workspace = create_workspace(scratch / "workspace", files={})
    state = RunState(
        run_id=key, model=model, messages=[{"role": "system", "content": opened["policy"]}]
    )
    said: list[dict[str, str]] = []
    end: End | None = None
    user_turns = 0
    error: str | None = None
    while end is None:
        text = await user.reply(said)
        user_turns += 1
        said.append({"role": "user", "content": text})
        await tau2.say(key, "user", text)
        end = user_end(text)
        if end is not None:
            break
        state.messages.append({"role": "user", "content": text})
        state.meta["task_tools"] = [t.name for t in tools]
        limits = LoopConfig.of(max_turns=state.turns + max_steps) if config is None else config
        state = await run_loop(
            state, client, Setup(tools, workspace, system_prompt=False), limits, recorder
        )
        if state.status == "failed":
            end, error = End.ERROR, state.error or "the agent's loop failed"
        elif state.status != "completed":
            end = End.AGENT_STOP
        elif len(state.turn_records) >= max_steps:
            end = End.STEP_CAP
        else:
            answer = state.answer or ""
            said.append({"role": "assistant", "content": answer})
            await tau2.say(key, "assistant", answer)
    if end is End.ERROR:
        return Outcome(end, None, user_turns=user_turns, state=state, error=error)
    judged = await tau2.evaluate(key, end.tau2)
    return Outcome(end, float(judged["reward"]), judged["info"], user_turns, state)
