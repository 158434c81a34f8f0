"""PostgreSQL, read-only: every statement in a READ ONLY transaction (``BEGIN READ ONLY``), one
command at a time (the extended protocol), as whatever role the URL names (``make
serve-postgres`` gives one that may only SELECT), under ``statement_timeout``. Each statement
gets its own connection, so parallel calls run side by side; the transaction is rolled back
after it."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.sql.database import (
    Column,
    Result,
    SQLError,
    Table,
    column_hint,
    function_hint,
    table_hint,
    type_hint,
)

_QUOTED = re.compile(r'"([^"]+)"')
_TYPES = {"timestamp without time zone": "timestamp", "character varying": "varchar"}
_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
  AND c.relname NOT LIKE '\\_%%'
ORDER BY c.relname, a.attnum
"""
_KEYS = """
SELECT cl.relname, a.attname, fcl.relname, fa.attname
FROM pg_constraint k JOIN pg_class cl ON cl.oid = k.conrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
JOIN pg_class fcl ON fcl.oid = k.confrelid
JOIN pg_attribute fa ON fa.attrelid = k.confrelid AND fa.attnum = k.confkey[1]
WHERE k.contype = 'f' AND n.nspname = %s
"""


# A password in libpq's key=value form: password=secret, password = 'se cret'.
_DSN_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def public_url(url: str) -> str:
    """The connection string without its password in any form (``user:secret@`` in a URL,
    a ``password=`` parameter of a URL, ``password=`` in libpq's key=value form): what a file,
    a record, a log or a report may keep. A password passed as ``PGPASSWORD`` or in a
    passfile never enters the string."""
    if "://" not in url:
        return _DSN_PASSWORD.sub(r"\1***", url)
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{parts.username}@{host}" if parts.username else host
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if k.lower() != "password"]  # fmt: skip
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, url: str, schema: str | None = None) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:  # pragma: no cover - psycopg is a dependency
            raise SQLError("PostgreSQL needs psycopg: pip install 'psycopg[binary]'") from exc
        self.url = url
        self.schema = schema or "public"
        self._tables: list[Table] | None = None

    @property
    def name(self) -> str:
        return f"{public_url(self.url)}#{self.schema}"

    def connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.url, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise SQLError(
                f"the database at {public_url(self.url)} cannot be reached: {exc}"
            ) from exc
        conn.read_only = True  # BEGIN READ ONLY for every transaction of this connection
        return conn

    def tables(self) -> list[Table]:
        """From the catalogue itself (information_schema hides constraints from a role that
        owns nothing): columns with their declared types, and foreign keys."""
        if self._tables is None:
            with self.connect() as conn:
                columns = conn.execute(_COLUMNS, (self.schema,)).fetchall()
                refs = {
                    (t, c): f"{rt}.{rc}" for t, c, rt, rc in conn.execute(_KEYS, (self.schema,))
                }
            by_table: dict[str, list[Column]] = {}
            for table, column, kind in columns:
                by_table.setdefault(table, []).append(
                    Column(column, _TYPES.get(kind, kind), refs.get((table, column)))
                )
            self._tables = [Table(n, tuple(c)) for n, c in by_table.items()]
        return self._tables

    def query(self, sql: str, timeout_s: float, keep: int) -> Result:
        import psycopg
        from psycopg import sql as pgsql

        started = time.perf_counter()
        with self.connect() as conn:
            try:
                with conn.cursor() as cur:
                    # Session settings (one connection per statement), so a COMMIT inside
                    # the statement cannot shed them as it would SET LOCAL's.
                    timeout_ms = pgsql.Literal(max(1, round(timeout_s * 1000)))
                    cur.execute(pgsql.SQL("SET statement_timeout = {}").format(timeout_ms))
                    cur.execute(
                        pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.schema))
                    )
                    # A query first, so that SET TRANSACTION READ WRITE comes too late and is
                    # refused by the server ("must be called before any query").
                    cur.execute("SELECT 1")
                    # With parameters (none), the statement goes out in the extended protocol,
                    # in which the server refuses more than one command: nothing can follow a
                    # COMMIT. Only the driver's placeholder mark is escaped.
                    cur.execute(sql.replace("%", "%%").encode("utf-8"), ())
                    if cur.description is None:
                        columns, rows, total = [], [], 0
                    else:
                        columns = [d.name for d in cur.description]
                        rows = cur.fetchmany(keep)
                        total = max(cur.rowcount, len(rows))
            except psycopg.Error as exc:
                raise self._error(exc, sql, timeout_s) from exc
            finally:
                conn.rollback()
        ms = (time.perf_counter() - started) * 1000
        return Result(columns, [tuple(r) for r in rows], total, ms)

    def _error(self, exc: Any, sql: str, timeout_s: float) -> SQLError:
        from psycopg import errors

        diag = getattr(exc, "diag", None)
        message = (diag.message_primary if diag else None) or str(exc).strip()
        own_hint = diag.message_hint if diag else None
        if isinstance(exc, errors.QueryCanceled):
            return SQLError(
                f"the statement ran past the {timeout_s:g} s statement timeout and was stopped",
                hint="Filter or aggregate so it reads fewer rows, or add a LIMIT.",
                timed_out=True,
            )
        if isinstance(exc, (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege)) or (
            isinstance(exc, errors.ActiveSqlTransaction) and "read-write" in message
        ):
            return SQLError(
                f"{message}: the database is read-only", refused_write=True,
                hint="Only SELECT statements can run here.",
            )  # fmt: skip
        quoted = _QUOTED.search(message)
        hint: str | None = None
        if isinstance(exc, errors.UndefinedColumn) and quoted:
            hint = column_hint(quoted[1], self.tables(), sql)
        elif isinstance(exc, errors.UndefinedTable) and quoted:
            hint = table_hint(quoted[1], self.tables())
        elif isinstance(exc, errors.UndefinedFunction):
            hint = function_hint(self.dialect) + " " + type_hint(self.tables(), sql)
        elif isinstance(exc, (errors.DatatypeMismatch, errors.InvalidDatetimeFormat,
                              errors.InvalidTextRepresentation)):  # fmt: skip
            hint = type_hint(self.tables(), sql)
        if own_hint:
            hint = f"{own_hint} {hint}" if hint else own_hint
        return SQLError(message, hint=hint)

    def close(self) -> None:
        return None
