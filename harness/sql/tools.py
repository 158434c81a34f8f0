"""``run_sql(query)`` and ``describe(table?)`` over one read-only database.

A result is a small text table: a header, at most ``row_cap`` rows, and a last line that says
how many rows there were and how many were cut. Each call reports an audit record as facts
(the SQL, milliseconds, rows, error, timeout), which the loop saves with the call and traces.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness.sql.database import Database, Result, SQLError, Table, cell
from harness.tools import Tool, ToolContext

RUN_SQL_TOOL = "run_sql"
DESCRIBE_TOOL = "describe"

# The tools' limits: each a setting of the run (``harness.policies.sql_limits`` declares them
# with their flags), read from ``ToolContext.settings``; these are their defaults.
STATEMENT_TIMEOUT_SETTING, STATEMENT_TIMEOUT_S = "statement_timeout_s", 15.0
ROW_CAP_SETTING, ROW_CAP = "row_cap", 20

_QUERY_ARG: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "One SQL SELECT statement"}},
    "required": ["query"],
    "additionalProperties": False,
}
_TABLE_ARG: dict[str, Any] = {
    "type": "object",
    "properties": {
        "table": {"type": "string", "description": "A table's name; leave out for every table"}
    },
    "additionalProperties": False,
}


def render(result: Result) -> str:
    """The text the model reads for a result."""
    if not result.columns:
        return "The statement returned no rows."
    lines = [" | ".join(result.columns)]
    lines += [" | ".join(cell(v) for v in row) for row in result.rows]
    if result.cut:
        lines.append(
            f"({result.total} rows; showing the first {len(result.rows)}, {result.cut} cut: "
            "aggregate, filter or add LIMIT to see fewer)"
        )
    else:
        lines.append(f"({result.total} row{'' if result.total == 1 else 's'})")
    lines += [f"({note})" for note in result.notes]
    return "\n".join(lines)


def audit(query: str, result: Result | None, error: SQLError | None, ms: float) -> dict[str, Any]:
    """One call's audit record: what ran, how long, how many rows, and what went wrong."""
    return {
        "sql": query,
        "ms": round(ms, 3),
        "rows": result.total if result else None,
        "cut": result.cut if result else None,
        "error": str(error) if error else None,
        "timed_out": bool(error and error.timed_out),
        "refused_write": bool(error and error.refused_write),
    }


def schema(tables: list[Table]) -> str:
    """The tables as ``describe`` lists them: one line each, columns, types and foreign keys."""
    return "\n".join(t.line() for t in tables)


def sql_tools(database: Database) -> list[Tool]:
    """The two tools over ``database``; limits come from the run's settings."""

    async def run_sql(args: dict[str, Any], ctx: ToolContext) -> str:
        query = str(args.get("query", "")).strip()
        if not query:
            raise SQLError("the query is empty; send one SELECT statement")
        timeout = float(ctx.settings.get(STATEMENT_TIMEOUT_SETTING, STATEMENT_TIMEOUT_S))
        cap = int(ctx.settings.get(ROW_CAP_SETTING, ROW_CAP))
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            result = await asyncio.to_thread(database.query, query, timeout, cap)
        except SQLError as exc:
            ctx.facts.update(audit(query, None, exc, (loop.time() - started) * 1000))
            raise
        ctx.facts.update(audit(query, result, None, result.ms))
        return render(result)

    async def describe(args: dict[str, Any], ctx: ToolContext) -> str:
        tables = await asyncio.to_thread(database.tables)
        wanted = args.get("table")
        if wanted:
            found = [t for t in tables if t.name.lower() == str(wanted).strip().lower()]
            if not found:
                names = ", ".join(t.name for t in tables)
                raise SQLError(f"no table {wanted}", hint=f"The tables are: {names}.")
            tables = found
        ctx.facts["tables"] = [t.name for t in tables]
        return schema(tables)

    return [
        Tool(
            RUN_SQL_TOOL,
            f"Run one read-only SQL query on the {database.dialect} database and read its "
            "result (the first rows, and how many there were).",
            _QUERY_ARG,
            run_sql,
            read_only=True,
        ),
        Tool(
            DESCRIBE_TOOL,
            "List the database's tables with their columns, types and foreign keys.",
            _TABLE_ARG,
            describe,
            read_only=True,
        ),
    ]
