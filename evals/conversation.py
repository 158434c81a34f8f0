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
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

import httpx

from evals.environments.base import scripted_provider
from harness.cancel import CancelToken
from harness.client import ChatClient, ModelReply, TurnOptions
from harness.errors import KeyRefused
from harness.policies.stop_tool import stop_called
from harness.state import RunState, Status, last_reply
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
    AGENT_STOP = "agent_stop"  # the agent ended it itself (τ²'s solo agent calls ``done``)
    # A limit of the agent's loop (its turns, budget or time): τ² has none, and its runner
    # would have gone on; judged as a conversation cut short (0).
    CAPPED = "capped"
    STEP_CAP = "step_cap"  # the conversation's step cap (τ²'s max_steps), or the user's turns
    TOO_MANY_ERRORS = "too_many_errors"  # failed tool calls of both sides (τ²'s max_errors)
    # The agent's reply held nothing after the retries (τ²'s message validation refuses it),
    # or, alone (solo), it wrote words where it must call a tool: judged 0, as τ² judges it.
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"  # the user's reply held nothing after the retries: judged 0
    ERROR = "error"  # the machinery failed: a provider, the environment, the user model

    @property
    def tau2(self) -> str:
        """τ²'s termination reason for this end."""
        return {
            End.USER_STOP: "user_stop",
            End.TRANSFER: "user_stop",
            End.OUT_OF_SCOPE: "user_stop",
            End.AGENT_STOP: "agent_stop",
            End.CAPPED: "max_steps",
            End.STEP_CAP: "max_steps",
            End.TOO_MANY_ERRORS: "too_many_errors",
            End.AGENT_ERROR: "agent_error",
            End.USER_ERROR: "user_error",
            End.ERROR: "agent_error",
        }[self]


@dataclass(frozen=True)
class Rules:
    """How a conversation is held: its caps (None: none) and τ²'s orchestrator's ways.

    ``max_steps`` counts as τ²'s orchestrator counts: every message of either side (a reply
    with calls included) and every answer of the environment to one message's calls; τ²'s
    greeting is not a step, nor, alone, the agent's first message. ``max_errors`` counts the
    failed tool calls of both sides. Both are checked after each step that is not a message to
    the environment, an error cap before the step cap. ``greeting``: the agent's history opens
    with τ²'s greeting, as the user's does. ``empty_retries``: a reply with neither words nor a
    call is asked for again, so many times, as τ²'s ``generate`` does; one still empty ends the
    conversation (``agent_error``, ``user_error``). ``solo``: no user; the agent works from its
    system prompt alone, ends with its stop tool, and any reply in words ends it as an error.
    ``unreadable_fails``: a call whose arguments are no JSON object ends the conversation as
    its side's error, as τ²'s ``generate`` (``json.loads`` of them) fails its runner; without
    it the call is answered with why, and the talk goes on.
    """

    max_user_turns: int | None = 30
    max_steps: int | None = None
    max_errors: int | None = None
    greeting: bool = False
    empty_retries: int = 0
    solo: bool = False
    stop_tool: str = ""  # the solo agent's stop tool (τ²'s ``done``)
    unreadable_fails: bool = False


def unreadable(message: dict[str, Any]) -> str | None:
    """The name of the first call in ``message`` whose arguments are no JSON object (τ²'s
    reading: ``json.loads`` as they are, so an empty string is not one), or None."""
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "")
        except (TypeError, ValueError, RecursionError):
            arguments = None
        if not isinstance(arguments, dict):
            return str(function.get("name"))
    return None


def empty(message: dict[str, Any]) -> bool:
    """A reply with neither words nor a call (τ²'s ``has_text_content`` strips)."""
    return not message.get("tool_calls") and not str(message.get("content") or "").strip()


@dataclass
class AskedAgain:
    """A client that asks again, up to ``retries`` times, when a reply holds neither words nor
    a call, as τ²'s ``generate`` does; what the empty replies cost is added to the reply kept."""

    client: ChatClient
    retries: int

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: CancelToken | None = None,
        options: TurnOptions | None = None,
    ) -> ModelReply:
        spent = (0, 0, 0.0)
        for attempt in range(self.retries + 1):
            reply = await self.client.chat(model, messages, tools, cancel, options)
            if not empty(reply.message) or attempt == self.retries:
                break
            spent = (spent[0] + reply.prompt_tokens, spent[1] + reply.completion_tokens,
                     spent[2] + reply.latency_ms)  # fmt: skip
        return replace(
            reply,
            prompt_tokens=reply.prompt_tokens + spent[0],
            completion_tokens=reply.completion_tokens + spent[1],
            latency_ms=reply.latency_ms + spent[2],
        )

    async def aclose(self) -> None:
        close = getattr(self.client, "aclose", None)
        if close is not None:
            await close()


def user_end(text: str) -> End | None:
    """The end a user's message asks for, if any."""
    for word, end in ((STOP, End.USER_STOP), (TRANSFER, End.TRANSFER),
                      (OUT_OF_SCOPE, End.OUT_OF_SCOPE)):  # fmt: skip
        if word in text:
            return end
    return None


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


@dataclass
class Talk:
    """What a conversation did: why it ended, the user's turns, what was said (the user's
    messages and the agent's answers, in order) and, when the user's side failed, why (the
    agent's own failures are its state's); its steps and failed tool calls as τ² counts them."""

    end: End
    user_turns: int = 0
    said: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    # How many tool calls the agent had made when the user wrote each of its messages.
    calls_before: list[int] = field(default_factory=list)
    steps: int = 0
    errors: int = 0

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
Agent = Callable[[RunState, "StopWhen"], Awaitable[RunState]]
StopWhen = Callable[[RunState], "tuple[Status, dict[str, Any]] | None"]


async def _nothing(_role: str, _text: str) -> None:
    return None


@dataclass
class _Count:
    """The conversation's steps and failed calls, counted as τ²'s orchestrator counts them:
    the user's from the user, the agent's from the run's transcript and tool log."""

    state: RunState
    user: User
    rules: Rules
    start: int  # the agent's first message of its own in ``state.messages``

    def steps(self) -> int:
        agent = sum(
            1 + bool(m.get("tool_calls") and not _stops(m, self.rules.stop_tool))
            for m in self.state.messages[self.start :]
            if m["role"] == "assistant"
        )
        if self.rules.solo and agent:
            agent -= 1  # τ² opens a solo run with the agent's first message, not a step
        return agent + int(getattr(self.user, "steps", 0))

    def errors(self) -> int:
        agent = sum(not run.ok for run in self.state.tool_log)
        return agent + int(getattr(self.user, "errors", 0))

    def capped(self) -> End | None:
        """The cap reached, if any (errors first: τ² checks them last, so they stand)."""
        if self.rules.max_errors is not None and self.errors() >= self.rules.max_errors:
            return End.TOO_MANY_ERRORS
        if self.rules.max_steps is not None and self.steps() >= self.rules.max_steps:
            return End.STEP_CAP
        return None

    def stop_when(self, state: RunState) -> tuple[Status, dict[str, Any]] | None:
        if self.rules.unreadable_fails and (name := _unreadable_reply(state)) is not None:
            return "completed", {"type": "unreadable_call", "tool": name}
        end = self.capped()
        if end is None:
            return None
        return "max_turns_exceeded", {"type": "max_steps" if end is End.STEP_CAP else "max_errors"}

    def ended(self, talk: Talk, end: End) -> Talk:
        talk.end, talk.steps, talk.errors = end, self.steps(), self.errors()
        return talk


def _stops(message: dict[str, Any], stop_tool: str) -> bool:
    """Whether an agent's message calls the stop tool: τ² turns such a message into its stop
    word, its calls dropped, so it is one step and no environment's answer follows."""
    calls = message.get("tool_calls") or []
    return bool(stop_tool) and any(
        (c.get("function") or {}).get("name") == stop_tool for c in calls
    )


def _unreadable_reply(state: RunState) -> str | None:
    """The call of the agent's newest reply whose arguments are no JSON object, if any."""
    last = last_reply(state)
    return unreadable(state.messages[last[0]]) if last is not None else None


def _agent_end(state: RunState, rules: Rules) -> End | None:
    """How the agent's loop ended the conversation, if it did."""
    if state.status == "failed":
        return End.ERROR
    if rules.unreadable_fails and _unreadable_reply(state) is not None:
        return End.AGENT_ERROR  # τ²'s runner fails as it reads the reply, before any stop
    if state.status == "max_turns_exceeded" and state.interruption:
        kind = state.interruption.get("type")
        if kind == "max_steps":
            return End.STEP_CAP
        if kind == "max_errors":
            return End.TOO_MANY_ERRORS
    if state.status != "completed":
        return End.CAPPED  # a limit of the loop's own: turns, budget, time
    if stop_called(state, rules.stop_tool):
        return End.AGENT_STOP  # the call, not words that name it: those fail a solo run
    if rules.solo:
        return End.AGENT_ERROR  # words where a call must be: τ²'s solo agent fails there
    if not (state.answer or "").strip():
        return End.AGENT_ERROR
    return None


async def converse(
    state: RunState,
    agent: Agent,
    user: User,
    recorder: Recorder | None = None,
    heard: Heard = _nothing,
    rules: Rules | None = None,
) -> Talk:
    """One conversation on ``state`` (its system message, if any, already in place), to its
    end: ``agent`` runs the agent's loop on the state after each user message (its caps count
    over the whole conversation; the rules' caps stop it between two of its model calls), the
    user replies to each of its answers. Solo, the agent works alone from the start."""
    rules = rules or Rules()
    talk = Talk(End.ERROR)
    recorder = recorder or Recorder()
    if rules.greeting:
        state.messages.append({"role": "assistant", "content": GREETING})
    count = _Count(state, user, rules, len(state.messages))
    if isinstance(user, ModelUser):
        user.check = count.capped
    if rules.solo:  # every end of the agent's loop ends a solo run
        ended = await _agent_turn(state, agent, talk, count, heard, rules)
        return ended or count.ended(talk, End.AGENT_ERROR)
    while True:
        if rules.max_user_turns is not None and talk.user_turns >= rules.max_user_turns:
            return count.ended(talk, End.STEP_CAP)
        try:
            text = await user.reply(talk.said)
        except UserFailed as exc:
            talk.error = str(exc)
            recorder.event(state, "user_failed", turn=talk.user_turns + 1, error=str(exc))
            return count.ended(talk, End.ERROR)
        except UserEmpty as exc:  # the trace says why, though the user said nothing
            recorder.event(state, "user_error", turn=talk.user_turns + 1, error=str(exc))
            return count.ended(talk, End.USER_ERROR)
        except Capped as exc:
            return count.ended(talk, exc.end)
        talk.user_turns += 1
        talk.said.append({"role": "user", "content": text})
        talk.calls_before.append(len(state.tool_log))
        recorder.event(state, "user", turn=talk.user_turns, content=text)
        if not await _followed(talk, heard, "user", text):
            return count.ended(talk, End.ERROR)
        if (end := count.capped() or user_end(text)) is not None:
            return count.ended(talk, end)
        state.messages.append({"role": "user", "content": text})
        state.answer, state.stop_reason = None, None
        ended = await _agent_turn(state, agent, talk, count, heard, rules)
        if ended is not None:
            return ended


async def _agent_turn(
    state: RunState, agent: Agent, talk: Talk, count: _Count, heard: Heard, rules: Rules
) -> Talk | None:
    """The agent's loop to its answer; the talk when the conversation ends there (solo: it
    always does), None when the user is to reply."""
    state = await agent(state, count.stop_when)
    end = _agent_end(state, rules)
    if end is End.AGENT_STOP:
        if not await _followed(talk, heard, "assistant", STOP):
            return count.ended(talk, End.ERROR)
        end = count.capped() or end  # τ²'s caps are read after the stop, and win over it
    if end is not None:
        return count.ended(talk, end)
    answer = state.answer or ""
    talk.said.append({"role": "assistant", "content": answer})
    if not await _followed(talk, heard, "assistant", answer):
        return count.ended(talk, End.ERROR)
    if (end := count.capped()) is not None:
        return count.ended(talk, end)
    return None


async def _followed(talk: Talk, heard: Heard, role: str, text: str) -> bool:
    """Whether the environment took the message into its trajectory; when it failed (its
    worker died or hung), the talk ends as an error: the machinery's fault."""
    try:
        await heard(role, text)
    except Exception as exc:
        talk.error = f"the environment could not follow the talk: {exc}"
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
