"""The user's side of a conversation: a :class:`User` opens and replies to each of the
agent's answers; a model behind any OpenAI-shaped URL prompted with the task's scenario
(:class:`ModelUser`, as τ² prompts its user simulator, with its own tools where the domain gives
it some), or given messages (:class:`ScriptedUser`: tests, replays)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evals.conversation.ends import GREETING, STOP, End, empty, unreadable
from harness.client import ChatClient, ModelReply, TurnOptions
from harness.errors import KeyRefused
from harness.tools import unencodable

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


class UserFailed(Exception):
    """The user's side failed (its model down, its tools' worker gone): the machinery's
    fault, never the agent's."""


class UserEmpty(Exception):
    """The user model's reply held nothing, asked again as τ² asks: the conversation ends as
    τ²'s runner ends it (0), not as the machinery's failure."""


class Capped(Exception):
    """A cap of the conversation was reached while the user worked its own tools."""

    def __init__(self, end: End) -> None:
        super().__init__(end.value)
        self.end = end


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
    steps: int = 0
    errors: int = 0

    async def reply(self, _: Sequence[dict[str, str]]) -> str:
        self.said += 1
        self.steps += 1
        return self.messages[self.said - 1] if self.said <= len(self.messages) else STOP


# A user's own tool calls (telecom's phone) before it writes its message, at most, where the
# conversation has no step cap (τ²'s has one, and no other).
USER_TOOL_ROUNDS = 10


@dataclass(frozen=True)
class Asked:
    """Where a tool call stands in its message: the call's id, the message's (the id of its
    first call) and the words written beside the calls."""

    call_id: str
    message: str
    content: str | None


UserCall = Callable[[str, dict[str, Any], Asked], Awaitable[tuple[str, bool]]]


@dataclass
class ModelUser:
    """A user played by any OpenAI-shaped model, prompted as τ² prompts its user simulator
    (``prompt``: its guidelines and the task's scenario). The model sees the conversation from
    the user's side: the agent's words are what it is told, its own are what it said. With
    ``tools`` (τ²'s dual control: the user's phone) it may call them, each run by ``call`` on
    the user's side of the environment, before it writes its message; the agent never sees
    them. ``steps`` and ``errors`` count its messages and its tools' answers as τ² counts them;
    ``check`` (the conversation's caps) is read after each answer of its tools."""

    client: ChatClient
    model: str
    prompt: str
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = 512  # a user that never stops talking is cut, and its turn kept
    tools: list[dict[str, Any]] = field(default_factory=list)
    call: UserCall | None = None
    empty_retries: int = 0
    unreadable_fails: bool = False  # a call it cannot read ends the talk (``Rules``)
    check: Callable[[], End | None] | None = None
    steps: int = 0
    errors: int = 0
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
        tools = self.tools if self.call is not None else []
        options = TurnOptions(
            temperature=self.temperature, seed=self.seed, max_tokens=self.max_tokens,
            tool_choice="auto" if tools else None,  # τ²'s user asks so whenever it has tools
        )  # fmt: skip
        rounds = 0
        while True:
            reply = await self._ask(tools, options)
            self.steps += 1
            calls = reply.message.get("tool_calls") or []
            if calls and self.unreadable_fails and (name := unreadable(reply.message)):
                raise UserEmpty(f"the user model's call of {name} has arguments no JSON object")
            if calls and self.call is not None:
                await self._run(calls, reply.message.get("content"))
                self.steps += 1  # the environment's answer to the message's calls
                if self.check is not None and (end := self.check()) is not None:
                    raise Capped(end)
                rounds += 1
                if self.check is None and rounds >= USER_TOOL_ROUNDS:
                    raise UserFailed(f"the user called its tools {rounds} times without a word")
                continue
            text = str(reply.message.get("content") or "")
            if not text.strip():
                raise UserEmpty("the user model replied with nothing")
            self._messages.append({"role": "assistant", "content": text})
            return text  # as written: τ² passes the user's words on untrimmed

    async def _ask(self, tools: list[dict[str, Any]], options: TurnOptions) -> ModelReply:
        """One reply, asked again while it is empty (``empty_retries`` times)."""
        for attempt in range(self.empty_retries + 1):
            try:
                reply = await self.client.chat(self.model, self._messages, tools, options=options)
            except KeyRefused:
                raise  # the user's endpoint refused its key: no conversation can go on
            except Exception as exc:  # any other failure of the user's side is the machinery's
                raise UserFailed(f"the user model failed: {exc}") from exc
            self._count(reply)
            if not empty(reply.message) or attempt == self.empty_retries:
                break
        return reply

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
        message = str(calls[0].get("id") or f"user-{self.steps}")
        for call in calls:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = None
            name = str(function.get("name"))
            failed = True
            if not isinstance(arguments, dict):
                result = "Error: the arguments are not a JSON object"
            elif (problem := unencodable(arguments)) is not None:
                result = f"Error: {problem}"
            else:
                asked = Asked(str(call.get("id") or ""), message, content)
                try:
                    result, failed = await self.call(name, arguments, asked)
                except Exception as exc:  # the environment's worker: the machinery's fault
                    raise UserFailed(f"the user's tool {name} failed: {exc}") from exc
            self.errors += failed
            self._messages.append(
                {"role": "tool", "tool_call_id": call.get("id"), "content": result}
            )
