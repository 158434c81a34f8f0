"""PostgreSQL, read-only: every statement in a READ ONLY transaction (``BEGIN READ ONLY``), one
command at a time (the extended protocol), under ``statement_timeout``, through a server-side
cursor (only the rows kept cross to this process; the rest are counted by the server). Each
statement gets its own connection, so parallel calls run side by side; the transaction is
rolled back after it.

A read-only transaction stops writes to tables, not what a privileged role can do from a
SELECT (``COPY ... TO PROGRAM``, ``pg_read_file``, ``lo_export``): on its first connection the
tool refuses a role that is a superuser, may create roles, holds a server-file role
(``pg_read_server_files``, ``pg_write_server_files``, ``pg_execute_server_program``),
``pg_write_all_data``, ``pg_read_all_data``, ``pg_signal_backend`` or ``pg_read_all_stats``
(concurrent task runs share the role: none may end another's session or read its SQL), or may
write to a table or create in the schema, naming the privilege. ``make serve-postgres`` gives
a role that may only SELECT, cannot signal a backend and does not report its queries."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.sql.database import (
    CELL_CAP_CHARS,
    Cell,
    Column,
    Result,
    SQLError,
    Table,
    column_hint,
    function_hint,
    keep_rows,
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
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = parts.query
    if any(k.lower() == "password" for k, _ in pairs):
        query = urlencode([(k, v) for k, v in pairs if k.lower() != "password"], safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# What a role must not hold to be used here: a name for each privilege, and the SQL that says
# whether the connected role holds it (%(schema)s: the bank's schema).
_PRIVILEGES = {
    "superuser": "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
    "CREATEROLE (it can grant itself any role)":
        "SELECT rolcreaterole FROM pg_roles WHERE rolname = current_user",
    **{
        f"membership of {role}": f"SELECT pg_has_role(current_user, '{role}', 'MEMBER')"
        for role in ("pg_read_server_files", "pg_write_server_files",
                     "pg_execute_server_program", "pg_write_all_data",
                     # another task run's sessions: end them, read all they read or their SQL
                     "pg_signal_backend", "pg_read_all_data", "pg_read_all_stats")
    },
    "CREATE on the schema": "SELECT has_schema_privilege(%(schema)s, 'CREATE')",
    "a write privilege on a table (INSERT, UPDATE, DELETE or TRUNCATE)": """
        SELECT EXISTS (
          SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
            AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE')
                 OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE')))
    """,
}  # fmt: skip
CURSOR = "loopbench_rows"
# What a cursor can run (DECLARE ... CURSOR FOR takes a query only), and the first words of
# statements that would write: refused as writes, as a read-only transaction refused them.
_QUERY_WORDS = frozenset({"select", "with", "values", "table", "("})
_WRITE_WORDS = frozenset(
    {"insert", "update", "delete", "merge", "create", "drop", "alter", "truncate", "copy",
     "grant", "revoke", "set", "reset", "commit", "begin", "start", "rollback", "end", "abort",
     "lock", "vacuum", "analyze", "cluster", "reindex", "refresh", "call", "do", "comment",
     "security", "import", "prepare", "execute", "deallocate", "discard", "load", "notify",
     "listen", "checkpoint", "savepoint", "release", "declare", "fetch", "move", "close"}
)  # fmt: skip
_FIRST_WORD = re.compile(r"\s*(\(|[A-Za-z_]+)")


# Types whose values are short and read as themselves (numbers keep their own rendering);
# every other column (text, json, arrays, bytea, composites) is cut in the server.
_SHORT_TYPES = frozenset({
    16, 20, 21, 23, 26, 700, 701, 790, 1700,  # bool, integers, oid, floats, money, numeric
    1082, 1083, 1114, 1184, 1186, 1266, 2950,  # dates, times, timestamps, interval, uuid
})  # fmt: skip
_BYTEA = 17


def _cut(sql: str, kinds: list[tuple[str, int]]) -> str:
    """``sql`` inside a query that hands back each long value cut in the server: for a column
    that is not a short type, its first :data:`CELL_CAP_CHARS` characters as text and its full
    length (a blob: its size only), rebuilt into a cell by :func:`_fetch`."""
    if not kinds:
        return sql
    names = ", ".join(f"c{i}" for i in range(len(kinds)))
    picked = []
    for i, (_, oid) in enumerate(kinds):
        if oid in _SHORT_TYPES:
            picked.append(f"q.c{i}")
        elif oid == _BYTEA:
            picked += ["NULL::text", f"octet_length(q.c{i})"]
        else:
            picked += [f"left(q.c{i}::text, {CELL_CAP_CHARS})", f"length(q.c{i}::text)"]
    # The statement on lines of its own, so that a trailing comment cannot swallow the rest.
    return f"SELECT {', '.join(picked)} FROM (\n{sql.rstrip().rstrip(';')}\n) AS q({names})"


def _fetch(cursor: Any, keep: int, kinds: list[tuple[str, int]]) -> Iterator[tuple[Any, ...]]:
    """The first ``keep`` rows of the cut query, one at a time, each as the statement's own
    columns: a value cut in the server becomes the cell the model reads, its length said."""
    for _ in range(keep):
        raw = cursor.fetchone()
        if raw is None:
            return
        values = iter(raw)
        row: list[Any] = []
        for _, oid in kinds:
            value = next(values)
            if oid in _SHORT_TYPES:
                row.append(value)
                continue
            length = next(values)
            if value is None and length is None:
                row.append(None)
            elif oid == _BYTEA:
                row.append(Cell(f"<blob of {length} bytes>"))
            elif length > CELL_CAP_CHARS:
                row.append(Cell(f"{value}[... cut: {length} characters]"))
            else:
                row.append(value)
        yield tuple(row)


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
        self._role_checked = False

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
        if not self._role_checked:
            try:
                self.check_role(conn)
            except BaseException:
                conn.close()
                raise
            self._role_checked = True
        return conn

    def check_role(self, conn: Any) -> None:
        """Refuse the connected role if it holds anything beyond reading (``_PRIVILEGES``)."""
        held = [
            name
            for name, query in _PRIVILEGES.items()
            if conn.execute(query, {"schema": self.schema}).fetchone()[0]
        ]
        conn.rollback()
        if held:
            role = conn.info.user
            raise SQLError(
                f"the role {role!r} at {public_url(self.url)} holds {'; '.join(held)}: this "
                "tool runs a model's SQL and connects only as a role that may read and nothing "
                "more (make serve-postgres makes one, loopbench_reader)"
            )

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
                with conn.cursor(name=CURSOR) as described:
                    # A server-side cursor (DECLARE ... CURSOR FOR the statement), declared to
                    # learn its columns, never fetched from. With parameters (none), the
                    # statement goes out in the extended protocol, in which the server refuses
                    # more than one command: nothing can follow a COMMIT. Only the driver's
                    # placeholder mark is escaped.
                    described.execute(sql.replace("%", "%%"), ())
                    kinds = [(d.name, d.type_code) for d in described.description or []]
                with conn.cursor(name=CURSOR) as rows_cursor:
                    # The same statement inside a query that cuts its long values in the
                    # server, so no value longer than a cell crosses to this process; rows
                    # are fetched one at a time under the result's byte budget, and MOVE
                    # counts the rest in the server.
                    rows_cursor.execute(_cut(sql, kinds).replace("%", "%%"), ())
                    rows, fetched, notes = keep_rows(_fetch(rows_cursor, keep, kinds), keep)
                    moved = conn.execute(
                        pgsql.SQL("MOVE FORWARD ALL IN {}").format(pgsql.Identifier(CURSOR))
                    )
                    total = fetched + max(moved.rowcount, 0)
            except psycopg.Error as exc:
                raise self._error(exc, sql, timeout_s) from exc
            finally:
                conn.rollback()
        ms = (time.perf_counter() - started) * 1000
        return Result([name for name, _ in kinds], rows, total, ms, notes)

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
        first = _FIRST_WORD.match(sql)
        word = first[1].lower() if first else ""
        if isinstance(exc, errors.SyntaxError) and word not in _QUERY_WORDS:
            return SQLError(
                f"{word.upper() or 'that'} is not a query: only a query (SELECT, WITH ... "
                "SELECT, VALUES or TABLE) runs here, and the database is read-only",
                refused_write=word in _WRITE_WORDS,
                hint="Only SELECT statements can run here.",
            )
        if (
            isinstance(exc, (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege))
            or (isinstance(exc, errors.ActiveSqlTransaction) and "read-write" in message)
            or (isinstance(exc, errors.FeatureNotSupported) and "data-modifying" in message)
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
