"""SQLite, read-only: the file opened with ``mode=ro``, ``PRAGMA query_only`` on, and an
authorizer (the database's own access control) that lets a statement do nothing but read:
select, read columns, call functions (not those that hand out pointers or load code), recurse,
and the PRAGMAs that only read. Every other action (writes, ATTACH, DETACH, transactions,
REINDEX, ANALYZE, virtual tables) is refused as the statement is compiled, and a statement
that asked for no read at all (``REINDEX`` on a bank without an index asks for nothing) is
refused as not a query. ``SQLITE_LIMIT_LENGTH`` bounds every string and blob a statement
builds and ``SQLITE_LIMIT_COLUMN`` the columns of a row; rows are fetched one at a time, long
values cut as they arrive, under a byte budget for the whole result
(:func:`~harness.sql.database.keep_rows`). A progress handler stops a statement past its
timeout. Each statement gets its own connection, so parallel calls run side by side."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from harness.sql.database import (
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

# PRAGMAs that only read, even when given an argument (PRAGMA table_info(customers)).
READING_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
     "foreign_key_list", "database_list", "collation_list", "function_list", "pragma_list"}
)  # fmt: skip
# Functions that hand out a C pointer (fts3_tokenizer, fts5 with a bound pointer) or load
# code: nothing a question about the data needs, each a step towards memory it should not see.
_REFUSED_FUNCTIONS = frozenset({"fts3_tokenizer", "fts5", "load_extension"})
# The longest string or blob a statement may build or read (SQLITE_LIMIT_LENGTH): one call of
# randomblob(1000000000) is a single step, which the timeout's progress handler never sees.
MAX_VALUE_BYTES = 1_000_000
PROGRESS_STEPS = 2000  # virtual-machine steps between two looks at the clock
_NO_COLUMN = re.compile(r"no such column: (\S+)")
_NO_TABLE = re.compile(r"no such table: (\S+)")


# What a query may ask the authorizer for; anything else is refused.
_READS = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
          sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_PRAGMA)  # fmt: skip
# The most columns a result row may have: with every value at most MAX_VALUE_BYTES, one row
# held while it is fetched stays bounded.
MAX_COLUMNS = 64


class _Reader:
    """The authorizer of one connection: refuses whatever is not a read, and remembers whether
    the statement asked to read at all."""

    def __init__(self) -> None:
        self.read = False

    def __call__(self, action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
        if action not in _READS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _REFUSED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and arg1 not in READING_PRAGMAS:
            return sqlite3.SQLITE_DENY
        self.read = True
        return sqlite3.SQLITE_OK


class SQLiteDatabase:
    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SQLError(f"no SQLite database at {self.path}")
        self._tables: list[Table] | None = None

    @property
    def name(self) -> str:
        return f"sqlite:///{self.path}"

    def connect(self, reader: _Reader | None = None) -> sqlite3.Connection:
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
        conn.set_authorizer(reader or _Reader())
        return conn

    def tables(self) -> list[Table]:
        if self._tables is None:
            conn = self.connect()
            try:
                names = [
                    r[0]
                    for r in conn.execute(
                        "SELECT name FROM sqlite_schema WHERE type = 'table' "
                        "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_%' ESCAPE '\\' "
                        "ORDER BY name"
                    )
                ]
                self._tables = [self._table(conn, n) for n in names]
            finally:
                conn.close()
        return self._tables

    @staticmethod
    def _table(conn: sqlite3.Connection, name: str) -> Table:
        refs = {r[3]: f"{r[2]}.{r[4]}" for r in conn.execute(f"PRAGMA foreign_key_list({name})")}
        columns = tuple(
            Column(r[1], (r[2] or "any").lower(), refs.get(r[1]))
            for r in conn.execute(f"PRAGMA table_info({name})")
        )
        return Table(name, columns)

    def query(self, sql: str, timeout_s: float, keep: int) -> Result:
        reader = _Reader()
        conn = self.connect(reader)
        started = time.perf_counter()
        # The statement's own work: this thread's CPU time, which other processes on a busy
        # machine do not stretch (the wall clock would).
        deadline = time.thread_time() + timeout_s
        conn.set_progress_handler(lambda: int(time.thread_time() > deadline), PROGRESS_STEPS)
        try:
            cursor = conn.execute(sql)
            if not reader.read:
                raise SQLError(
                    "refused: that statement is not a query; the database is read-only",
                    refused_write=True,
                    hint="Only SELECT statements can run here.",
                )
            columns = [d[0] for d in cursor.description or []]
            rows, total, notes = keep_rows(cursor, keep)
        except sqlite3.Error as exc:
            raise self._error(exc, sql, time.thread_time() > deadline, timeout_s) from exc
        finally:
            conn.close()
        return Result(columns, rows, total, (time.perf_counter() - started) * 1000, notes)

    def _error(self, exc: sqlite3.Error, sql: str, late: bool, timeout_s: float) -> SQLError:
        message = str(exc)
        if late and "interrupted" in message:
            return SQLError(
                f"the statement ran past the {timeout_s:g} s statement timeout and was stopped",
                hint="Filter or aggregate so it reads fewer rows, or add a LIMIT.",
                timed_out=True,
            )
        if "not authorized to use function" in message:
            return SQLError(f"{message}: that function is refused here")
        if isinstance(exc, sqlite3.DatabaseError) and (
            "not authorized" in message or "readonly" in message or "query_only" in message
        ):
            return SQLError(
                f"{message}: the database is read-only", refused_write=True,
                hint="Only SELECT statements can run here.",
            )  # fmt: skip
        if "too big" in message:
            return SQLError(
                f"{message}: a value here may hold at most {MAX_VALUE_BYTES} bytes",
                hint="Select the columns you need, or length(...) of a long value.",
            )
        if m := _NO_COLUMN.search(message):
            return SQLError(message, hint=column_hint(m[1], self.tables(), sql))
        if m := _NO_TABLE.search(message):
            return SQLError(message, hint=table_hint(m[1], self.tables()))
        if "no such function" in message:
            return SQLError(message, hint=function_hint(self.dialect))
        if "datatype mismatch" in message or "type" in message:
            return SQLError(message, hint=type_hint(self.tables(), sql))
        return SQLError(message)

    def close(self) -> None:
        return None
