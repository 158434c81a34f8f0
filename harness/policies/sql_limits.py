"""``statement_timeout_s`` and ``row_cap``: the SQL tools' limits (``harness.sql``).

A statement that runs past its timeout is stopped by the database and the model reads why; the
run goes on. A result longer than the row cap shows its first rows and says how many were
cut. The tools read both from the run's settings (``ToolContext.settings``)."""

from __future__ import annotations

from harness.policies.base import Hook, Setting
from harness.sql.tools import ROW_CAP as DEFAULT_ROW_CAP
from harness.sql.tools import (
    ROW_CAP_SETTING,
    STATEMENT_TIMEOUT_S,
    STATEMENT_TIMEOUT_SETTING,
)

STATEMENT_TIMEOUT: Setting[float] = Setting(
    STATEMENT_TIMEOUT_SETTING,
    STATEMENT_TIMEOUT_S,
    "seconds one SQL statement may run before the database stops it",
    "float",
    metavar="S",
    doc=(
        "the SQL tools: seconds one statement may run before the database stops it (the run goes "
        "on)"
    ),
)
ROW_CAP: Setting[int] = Setting(
    ROW_CAP_SETTING,
    DEFAULT_ROW_CAP,
    "rows of a query result the model reads; the rest are counted",
    "int",
    metavar="N",
    doc="the SQL tools: rows of a result the model reads; the last line says how many were cut",
)


class SQLLimits(Hook):
    name = "sql_limits"
    settings = (STATEMENT_TIMEOUT, ROW_CAP)


HOOK = SQLLimits()
