"""What a task holds for a conversation: the simulated user's scenario."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class UserScenario(BaseModel):
    """The user a task's conversation is held with. ``scenario``: what the user wants, what
    they know and how they behave, in the user's own terms (shown to the user model, never to
    the agent). ``script``: the user's messages as given, in order (a scripted user: tests,
    replays), after which the user stops."""

    model_config = ConfigDict(extra="forbid")
    scenario: str = Field(min_length=1, max_length=20_000)
    script: list[str] | None = Field(default=None, max_length=200)
