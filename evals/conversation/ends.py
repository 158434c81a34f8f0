"""What a conversation is made of, for either side: the words that end it, τ²'s greeting,
why it ended (:class:`End`, each mapped to τ²'s termination reason), how it is held
(:class:`Rules`) and how a reply is read (empty, a call that cannot be read, a stop word)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# A simulated user ends a conversation by writing one of these (τ²'s own words).
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"

# What a model user reads first, as τ²'s orchestrator has the agent open.
GREETING = "Hi! How can I help you today?"


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


def user_end(text: str) -> End | None:
    """The end a user's message asks for, if any."""
    for word, end in ((STOP, End.USER_STOP), (TRANSFER, End.TRANSFER),
                      (OUT_OF_SCOPE, End.OUT_OF_SCOPE)):  # fmt: skip
        if word in text:
            return end
    return None
