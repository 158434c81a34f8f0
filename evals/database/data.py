"""What a record of a task over a database keeps (registered by the database environment as it
enters the registry)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from evals.record import Data


class DatabaseData(Data):
    """A database: where the data was (``sqlite``, or the PostgreSQL URL without its password)
    and one audit entry per ``run_sql`` call (turn, sql, ms, rows, cut, error, timed_out,
    refused_write)."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["database"] = "database"
    database: str | None = None
    audit: list[dict[str, Any]] | None = None
