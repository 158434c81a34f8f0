"""SQL over a read-only database: the ``run_sql`` and ``describe`` tools and the databases
behind them (SQLite from the standard library, PostgreSQL through psycopg).

Read-only is the database's doing, never a parse of the SQL: SQLite is opened read-only with
``query_only`` on and an authorizer that refuses ATTACH and any PRAGMA that sets a value;
PostgreSQL runs every statement in a READ ONLY transaction, as a role that may only read. Each
statement runs under a timeout that stops the statement, not the run.
"""

from harness.sql.database import Column, Database, Result, SQLError, Table
from harness.sql.postgres import PostgresDatabase
from harness.sql.sqlite import SQLiteDatabase
from harness.sql.tools import DESCRIBE_TOOL, RUN_SQL_TOOL, schema, sql_tools

__all__ = [
    "DESCRIBE_TOOL",
    "RUN_SQL_TOOL",
    "Column",
    "Database",
    "Result",
    "SQLError",
    "Table",
    "is_postgres_url",
    "open_database",
    "schema",
    "sql_tools",
]


def is_postgres_url(url: str | None) -> bool:
    """Whether ``url`` names a PostgreSQL server (anything else is a SQLite file)."""
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def open_database(url: str, schema: str | None = None) -> Database:
    """A database by URL: ``postgresql://...`` (tables in ``schema``) or a SQLite file's path
    (``sqlite:///PATH`` or a plain path)."""
    if is_postgres_url(url):
        return PostgresDatabase(url, schema)
    return SQLiteDatabase(url.removeprefix("sqlite:///").removeprefix("sqlite://"))
