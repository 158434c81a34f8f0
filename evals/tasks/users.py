"""What a task holds for a conversation: the simulated user's scenario, and for a τ² task,
which of τ²'s tasks it is."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evals.tasks.fields import TaskFields


class UserScenario(BaseModel):
    """The user a task's conversation is held with. ``scenario``: what the user wants, what
    they know and how they behave, in the user's own terms (shown to the user model, never to
    the agent). ``script``: the user's messages as given, in order (a scripted user: tests,
    replays), after which the user stops."""

    model_config = ConfigDict(extra="forbid")
    scenario: str = Field(min_length=1, max_length=20_000)
    script: list[str] | None = Field(default=None, max_length=200)


class Tau2Ref(TaskFields):
    """One of τ²-bench's tasks, by its domain and its own id, under the task's ``tau2`` key:
    its environment, tools, policy, user and verdict are τ²'s (``evals.environments.tau2``)."""

    key = "tau2"
    domain: str = Field(pattern=r"^(airline|retail|telecom)$")
    task: str = Field(min_length=1, max_length=300)
    # How τ² holds it: with its user (``conversation``), the agent alone with the ticket
    # (``solo``), or the agent given the task's expected actions, with its user (``gt``).
    mode: str = Field(default="conversation", pattern=r"^(conversation|solo|gt)$")
