"""What a τ² task holds: which of τ²'s tasks it is, under the task's ``tau2`` key (registered
by τ²'s environment as it enters the registry)."""

from __future__ import annotations

from pydantic import Field

from evals.tasks import TaskFields


class Tau2Ref(TaskFields):
    """One of τ²-bench's tasks, by its domain and its own id, under the task's ``tau2`` key:
    its environment, tools, policy, user and verdict are τ²'s (``evals.tau2.environment``)."""

    key = "tau2"
    domain: str = Field(pattern=r"^(airline|retail|telecom)$")
    task: str = Field(min_length=1, max_length=300)
    # How τ² holds it: with its user (``conversation``), the agent alone with the ticket
    # (``solo``), or the agent given the task's expected actions, with its user (``gt``).
    mode: str = Field(default="conversation", pattern=r"^(conversation|solo|gt)$")
