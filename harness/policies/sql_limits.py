"""``statement_timeout_s`` and ``row_cap``: the SQL tools' limits (``harness.sql``).

A statement that runs past its timeout is stopped by the database and the model reads why; the
run goes on. A result longer than the row cap shows its first rows and says how many were
cut. The tools read both from the run's settings (``ToolContext.policy``)."""

from __future__ import annotations

from harness.policies.base import LoopPolicy, Setting

STATEMENT_TIMEOUT: Setting[float] = Setting(
    "statement_timeout_s",
    15.0,
    "seconds one SQL statement may run before the database stops it",
    "float",
    metavar="S",
)
ROW_CAP: Setting[int] = Setting(
    "row_cap", 20, "rows of a query result the model reads; the rest are counted", "int",
    metavar="N",
)  # fmt: skip


class SQLLimits(LoopPolicy):
    name = "sql_limits"
    settings = (STATEMENT_TIMEOUT, ROW_CAP)


POLICY = SQLLimits()
