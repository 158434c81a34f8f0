"""A conversation held to its end: the user opens; the agent (``harness.loop.run_loop``,
every control of the loop applying) works with its tools until it answers in words; the user
reads that and replies; and so on until the user ends it, the agent's loop stops, or a cap is
reached, each step and failed call counted as τ²'s orchestrator counts them. Also the scripted
agents (the oracle, the idle one) and the client that asks an empty reply again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from evals.conversation.ends import GREETING, STOP, End, Rules, empty, unreadable, user_end
from evals.conversation.user import Capped, ModelUser, User, UserEmpty, UserFailed
from evals.environments.base import scripted_provider
from harness.cancel import CancelToken
from harness.client import ChatClient, ModelReply, TurnOptions
from harness.policies.stop_tool import stop_called
from harness.state import RunState, Status, last_reply
from harness.trace import Recorder


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
