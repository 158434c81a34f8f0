"""What a task over a database holds: the bank it asks about, under the task's ``database``
key (registered by the database environment as it enters the registry)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from evals.tasks import TaskFields


class DatabaseRef(TaskFields):
    """The database a task's questions are asked about (the database environment, and an MCP
    server over it): a generated one, named by its source and seed, with the fingerprint of
    the rows the expected answers were computed on."""

    key: ClassVar[str] = "database"
    source: Literal["bank"] = "bank"
    seed: int
    fingerprint: str = Field(min_length=1)
