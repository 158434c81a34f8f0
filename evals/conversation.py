"""A task run as a conversation: our agent loop on one side, a simulated user on the other.

The user opens; the agent (``harness.loop.run_loop``, every control of the loop applying: caps,
budgets, timeouts, the tool-error policy, approvals, the trace) works with its tools until it
answers in words; the user reads that and replies; and so on until the user ends it (one of
τ²'s stop words), the agent's loop stops, or a cap is reached. Why it ended is typed
(:class:`End`, each mapped to τ²'s termination reason), never read back from the transcript.

The user is a :class:`User`: a model behind any OpenAI-shaped URL prompted with the task's
scenario (:class:`ModelUser`), or given messages (:class:`ScriptedUser`: tests, replays). What
the environment must follow of the talk (τ²'s trajectory) it hears through ``heard``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import httpx

from evals.environments.base import scripted_provider
from harness.client import ChatClient, ModelReply, TurnOptions
from harness.errors import KeyRefused
from harness.state import RunState
from harness.tools import unencodable
from harness.trace import Recorder

# A simulated user ends a conversation by writing one of these (τ²'s own words).
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"

# What a model user reads first, as τ²'s orchestrator has the agent open.
GREETING = "Hi! How can I help you today?"

# The guidelines a model user follows on a task file's own scenario (τ² tasks bring τ²'s).
GUIDELINES = """You are playing the role of a user who asks an assistant for help. Your goal is
to get what the scenario below says you want, by talking with the assistant.

Rules:
- Write one short message at a time, as a person would, in your own words.
- Say only what the scenario gives you; if you are asked for something it does not say, say
  you do not know it. Never invent facts.
- Do not do the assistant's work and do not read out these instructions or the scenario.
- When you have what you wanted (or the assistant cannot help), write only ###STOP###.
- If the assistant asks you to talk to someone else, write only ###TRANSFER###.

<scenario>
{scenario}
</scenario>"""


class End(StrEnum):
    """Why a conversation ended."""

    USER_STOP = "user_stop"
    TRANSFER = "transfer"
    OUT_OF_SCOPE = "out_of_scope"
    AGENT_STOP = "agent_stop"  # the agent's loop ended without an answer (a budget, a timeout)
    STEP_CAP = "step_cap"  # the conversation's turn caps: the agent's turns or the user's
    ERROR = "error"  # the machinery failed: a provider, the environment, the user model

    @property
    def tau2(self) -> str:
        """τ²'s termination reason for this end."""
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


class UserFailed(Exception):
    """The user's side failed (its model down, or replying with nothing): the machinery's
    fault, never the agent's."""


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


# A user's own tool calls (telecom's phone) before it writes its message, at most.
USER_TOOL_ROUNDS = 10

UserCall = Callable[[str, dict[str, Any]], Awaitable[tuple[str, bool]]]


@dataclass
class ModelUser:
    """A user played by any OpenAI-shaped model, prompted as τ² prompts its user simulator
    (``prompt``: its guidelines and the task's scenario). The model sees the conversation from
    the user's side: the agent's words are what it is told, its own are what it said. With
    ``tools`` (τ²'s dual control: the user's phone) it may call them, each run by ``call`` on
    the user's side of the environment, before it writes its message; the agent never sees
    them."""

    client: ChatClient
    model: str
    prompt: str
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int = 512  # a user that never stops talking is cut, and its turn kept
    tools: list[dict[str, Any]] = field(default_factory=list)
    call: UserCall | None = None
    # What the user's side cost: requests, tokens, ms, and prompt tokens the server computed.
    spent: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("requests", "prompt_tokens",
                                               "completion_tokens", "ms", "prompt_n"), 0.0)
    )  # fmt: skip
    _messages: list[dict[str, Any]] = field(default_factory=list)
    _seen: int = 0

    async def reply(self, said: Sequence[dict[str, str]]) -> str:
        if not self._messages:
            self._messages = [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": GREETING},
            ]
        for message in said[self._seen :]:
            flipped = "user" if message["role"] == "assistant" else "assistant"
            self._messages.append({"role": flipped, "content": message["content"]})
        self._seen = len(said) + 1  # and the message this returns
        options = TurnOptions(
            temperature=self.temperature, seed=self.seed, max_tokens=self.max_tokens
        )
        tools = self.tools if self.call is not None else []
        for _ in range(USER_TOOL_ROUNDS + 1):
            try:
                reply = await self.client.chat(self.model, self._messages, tools, options=options)
            except KeyRefused:
                raise  # the user's endpoint refused its key: no conversation can go on
            except Exception as exc:  # any other failure of the user's side is the machinery's
                raise UserFailed(f"the user model failed: {exc}") from exc
            self._count(reply)
            calls = reply.message.get("tool_calls") or []
            if calls and self.call is not None:
                await self._run(calls, reply.message.get("content"))
                continue
            text = str(reply.message.get("content") or "").strip()
            if not text:
                raise UserFailed("the user model replied with nothing")
            self._messages.append({"role": "assistant", "content": text})
            return text
        raise UserFailed(f"the user called its tools {USER_TOOL_ROUNDS} times without a word")

    def _count(self, reply: ModelReply) -> None:
        self.spent["requests"] += 1
        self.spent["prompt_tokens"] += reply.prompt_tokens
        self.spent["completion_tokens"] += reply.completion_tokens
        self.spent["ms"] += reply.latency_ms
        self.spent["prompt_n"] += (reply.timings or {}).get("prompt_n") or 0
        if reply.retries:  # the provider's 429s and 5xx before this reply, and the wait
            self.spent["retries"] = self.spent.get("retries", 0.0) + reply.retries
            self.spent["retry_wait_s"] = self.spent.get("retry_wait_s", 0.0) + reply.waited_s

    async def _run(self, calls: list[dict[str, Any]], content: Any) -> None:
        assert self.call is not None
        self._messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = None
            name = str(function.get("name"))
            if not isinstance(arguments, dict):
                result = "Error: the arguments are not a JSON object"
            elif (problem := unencodable(arguments)) is not None:
                result = f"Error: {problem}"
            else:
                try:
                    result, _ = await self.call(name, arguments)
                except Exception as exc:  # the environment's worker: the machinery's fault
                    raise UserFailed(f"the user's tool {name} failed: {exc}") from exc
            self._messages.append(
                {"role": "tool", "tool_call_id": call.get("id"), "content": result}
            )


@dataclass
class Talk:
    """What a conversation did: why it ended, the user's turns, what was said (the user's
    messages and the agent's answers, in order) and, when the user's side failed, why (the
    agent's own failures are its state's)."""

    end: End
    user_turns: int = 0
    said: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    # How many tool calls the agent had made when the user wrote each of its messages.
    calls_before: list[int] = field(default_factory=list)

    def user_messages(self) -> list[tuple[str, int, str | None]]:
        """Each of the user's messages, with the agent's calls made before it and the agent's
        words it replied to (None for the first)."""
        found: list[tuple[str, int, str | None]] = []
        before: str | None = None
        for message in self.said:
            if message["role"] == "assistant":
                before = message["content"]
                continue
            found.append((message["content"], self.calls_before[len(found)], before))
        return found


Heard = Callable[[str, str], Awaitable[None]]


async def _nothing(_role: str, _text: str) -> None:
    return None


async def converse(
    state: RunState,
    agent: Callable[[RunState], Awaitable[RunState]],
    user: User,
    recorder: Recorder | None = None,
    heard: Heard = _nothing,
    max_user_turns: int = 30,
) -> Talk:
    """One conversation on ``state`` (its system message, if any, already in place), to its
    end: ``agent`` runs the agent's loop on the state after each user message (its caps count
    over the whole conversation), ``max_user_turns`` caps the user's messages."""
    talk = Talk(End.ERROR)
    recorder = recorder or Recorder()
    while True:
        if talk.user_turns >= max_user_turns:
            talk.end = End.STEP_CAP
            return talk
        try:
            text = await user.reply(talk.said)
        except UserFailed as exc:
            talk.end, talk.error = End.ERROR, str(exc)
            return talk
        talk.user_turns += 1
        talk.said.append({"role": "user", "content": text})
        talk.calls_before.append(len(state.tool_log))
        recorder.event(state, "user", turn=talk.user_turns, content=text)
        if not await _followed(talk, heard, "user", text):
            return talk
        if (end := user_end(text)) is not None:
            talk.end = end
            return talk
        state.messages.append({"role": "user", "content": text})
        state.answer, state.stop_reason = None, None
        state = await agent(state)
        if state.status == "failed":
            talk.end = End.ERROR
            return talk
        if state.status == "max_turns_exceeded":
            talk.end = End.STEP_CAP
            return talk
        if state.status != "completed":
            talk.end = End.AGENT_STOP
            return talk
        answer = state.answer or ""
        talk.said.append({"role": "assistant", "content": answer})
        if not await _followed(talk, heard, "assistant", answer):
            return talk


async def _followed(talk: Talk, heard: Heard, role: str, text: str) -> bool:
    """Whether the environment took the message into its trajectory; when it failed (its
    worker died or hung), the talk ends as an error: the machinery's fault."""
    try:
        await heard(role, text)
    except Exception as exc:
        talk.end, talk.error = End.ERROR, f"the environment could not follow the talk: {exc}"
        return False
    return True


# The agents a conversation can be held with besides a model: the ceiling and the floor of a
# task set under one user (``--agent``).
AGENTS = ("model", "oracle", "idle")
IDLE_WORDS = "I am sorry, I cannot help with that."
CLOSING = "Is there anything else I can help you with?"


def scripted_agent(
    calls: Sequence[tuple[str, dict[str, Any]]], words: str
) -> Callable[[httpx.Request], httpx.Response]:
    """A provider playing an agent that makes ``calls`` (name, arguments), one a turn, from
    the user's first message on, then says ``words``, then answers every later message with a
    closing line. ``calls`` empty and ``words`` a refusal: the agent that does nothing."""
    return scripted_provider(calls, words, CLOSING)
