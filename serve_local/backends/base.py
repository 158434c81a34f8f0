"""The backend plug point and what a backend returns."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from serve_local.schema import ChatRequest, Timings


@dataclass
class Completion:
    """One assistant reply, before it is shaped for the wire."""

    model: str
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    refusal: str | None = None
    timings: Timings | None = None
    # What the chat vocabulary cannot say, for the Messages shape: ``stop_sequence`` (which
    # sequence ended the reply, ``finish_reason`` is then ``stop``) or ``pause_turn``.
    stop_reason: str | None = None
    stop_sequence: str | None = None
    # Calls of offered tools the parser would not make (name, arguments, reason): sent beside
    # ``timings`` so that invalid calls stay countable when none reaches the client.
    refused_calls: list[dict[str, str]] = field(default_factory=list)
    # Keywords of the offered tools' schemas the call grammar could not express (tool,
    # keyword, detail): the reply was constrained less there, its calls checked afterwards.
    grammar_loosened: list[dict[str, str]] = field(default_factory=list)


class Backend(Protocol):
    name: str
    load_error: str | None

    def load(self) -> None:
        """Load weights; called once in a worker thread while ``/health`` answers 503."""
        ...

    @property
    def ready(self) -> bool:
        """True once the backend can answer (a model backend is loading until then)."""
        ...

    def models(self) -> list[dict[str, Any]]:
        """Entries for ``/v1/models``: ``id`` plus whatever the backend knows of its weights."""
        ...

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        """One reply. ``cancel`` is set when the client goes away: stop generating."""
        ...
