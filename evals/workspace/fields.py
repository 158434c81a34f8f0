"""What a task over a generated git history holds: the repository laid out in its workspace,
under the task's ``repository`` key (registered by the workspace environment as it enters the
registry)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from evals.tasks import TaskFields


class RepositoryRef(TaskFields):
    """A git repository a task's questions are asked about, laid out in its workspace: a
    generated history, named by its seed, with the fingerprint of its commits."""

    key: ClassVar[str] = "repository"
    source: Literal["history"] = "history"
    seed: int
    fingerprint: str = Field(min_length=1)
