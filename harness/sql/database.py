"""What a database gives the SQL tools: its tables, and one statement's result under a
timeout. The result and the errors are the same shape for every database."""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from harness.errors import ToolError


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    references: str | None = None  # "customers.id" for a foreign key


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    def line(self) -> str:
        """``customers(id integer, name text, branch_id integer -> branches.id)``"""
        cols = ", ".join(
            f"{c.name} {c.type}" + (f" -> {c.references}" if c.references else "")
            for c in self.columns
        )
        return f"{self.name}({cols})"


@dataclass
class Result:
    """A statement's result: its columns, the rows kept (at most the cap) and how many rows
    it returned in all."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    total: int
    ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def cut(self) -> int:
        return self.total - len(self.rows)


class SQLError(ToolError):
    """A statement the database refused or stopped. The message is the database's own; the
    hint (read under ``error_hints=hinted``) says what exists instead."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        timed_out: bool = False,
        refused_write: bool = False,
    ) -> None:
        super().__init__(message, hint=hint)
        self.timed_out = timed_out
        self.refused_write = refused_write


class Database(Protocol):
    dialect: str  # "sqlite" | "postgresql"

    @property
    def name(self) -> str:
        """Where the data is, for records (no password)."""
        ...

    def tables(self) -> list[Table]: ...

    def query(self, sql: str, timeout_s: float, keep: int) -> Result:
        """Run one statement, read-only, stopped after ``timeout_s``; keep at most ``keep``
        rows of its result. Blocking (the tools call it in a thread). Raises SQLError."""
        ...

    def close(self) -> None: ...


# The most of one value the model reads; a longer text is cut there, the cut said in the cell.
CELL_CAP_CHARS = 500
# The most the kept rows of one result may hold, their values as kept (long ones already cut
# to a cell): past it, the remaining rows are counted and dropped, so a statement that returns
# wide rows of long values costs a bounded amount of memory, whatever the row cap.
RESULT_BUDGET_BYTES = 256 * 1024


class Cell(str):
    """A value already shown as its cell (cut when it was fetched): rendered as it is."""


def cell(value: Any) -> str:
    """One value as the model reads it, the same from every database: numbers without
    trailing zeros (``1234.5``, never ``1234.50`` from one and ``1234.5`` from the other),
    times as ``YYYY-MM-DD HH:MM:SS``, NULL as ``NULL``, a blob as its size, and a text longer
    than :data:`CELL_CAP_CHARS` cut there."""
    if isinstance(value, Cell):
        return str(value)
    text = _cell(value)
    if len(text) <= CELL_CAP_CHARS:
        return text
    return f"{text[:CELL_CAP_CHARS]}[... cut: {len(text)} characters]"


def _kept(value: Any) -> Any:
    """A fetched value as a result keeps it: a long text or any blob is held as its cell
    (cut, with its length said), everything else as it came."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Cell(cell(value))
    if isinstance(value, str) and len(value) > CELL_CAP_CHARS:
        return Cell(cell(value))
    return value


def keep_rows(
    rows: Iterable[Sequence[Any]], keep: int
) -> tuple[list[tuple[Any, ...]], int, list[str]]:
    """(rows kept, rows in all, notes) from rows fetched one at a time: at most ``keep`` rows,
    each value cut as it arrives, and no more rows once the kept ones hold
    :data:`RESULT_BUDGET_BYTES`; the rest are counted, never held."""
    kept: list[tuple[Any, ...]] = []
    total = size = 0
    full = False
    for row in rows:
        total += 1
        if full or len(kept) >= keep:
            continue
        small = tuple(_kept(v) for v in row)
        size += sum(len(v) if isinstance(v, str) else 16 for v in small)
        if size > RESULT_BUDGET_BYTES:
            full = True
            continue
        kept.append(small)
    notes = []
    if full:
        notes.append(
            f"only the first {len(kept)} rows are shown: the result holds more than "
            f"{RESULT_BUDGET_BYTES // 1024} KB of values (select fewer or shorter columns)"
        )
    return kept, total, notes


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (float, Decimal)):
        if value != value:  # NaN
            return "NaN"
        text = f"{float(value):.6f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob of {len(value)} bytes>"
    return str(value)


# --- hints: what exists, for an unknown column, table or function ------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _close(name: str, choices: list[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(name.lower(), choices, n=n, cutoff=0.75)


def column_hint(missing: str, tables: list[Table], sql: str) -> str:
    """For an unknown column: the columns it most likely means (``customer_name`` is
    ``customers.name``; ``customer_id`` asked of customers is ``accounts.customer_id``; a near
    spelling of a column's name), and the columns of the tables the statement names."""
    bare = missing.split(".")[-1].strip('"').lower()
    qualified = [(t, c) for t in tables for c in t.columns]
    near = [f"{t.name}.{c.name}" for t, c in qualified if c.name.lower() == bare]
    head, _, tail = bare.rpartition("_")
    if head:  # table_column: the table named in the singular or the plural
        near += [
            f"{t.name}.{c.name}"
            for t, c in qualified
            if head in _spellings(t.name) and c.name.lower() == tail
        ]
    if (tail or bare) in _TIME_WORDS:  # a date by another name: the columns that hold one
        named_here = {t.name for t in _named_tables(sql, tables) or tables}
        near += [
            f"{t.name}.{c.name}"
            for t, c in qualified
            if t.name in named_here and c.type.split("(")[0] in ("date", "timestamp", "datetime")
        ]
    names = sorted({c.name.lower() for _, c in qualified})
    close = set(_close(bare, names, n=2))
    near += [f"{t.name}.{c.name}" for t, c in qualified if c.name.lower() in close]
    named = _named_tables(sql, tables) or tables
    text = f"no column {bare} in {', '.join(t.name for t in named)}. "
    if near:
        shown = list(dict.fromkeys(near))[:3]
        elsewhere = sorted({q.split(".")[0] for q in shown} - {t.name for t in named})
        text += f"Did you mean {', '.join(shown)}"
        text += f" (JOIN {' and '.join(elsewhere)} for it)? " if elsewhere else "? "
    return text + "Columns: " + "; ".join(t.line() for t in named) + "."


_TIME_WORDS = {"date", "time", "timestamp", "datetime", "day", "at", "on", "when", "created"}


def _spellings(table: str) -> set[str]:
    """A table's name as a column prefix writes it: customers, customer; branches, branch."""
    name = table.lower()
    return {name, name.removesuffix("s"), name.removesuffix("es")}


def table_hint(missing: str, tables: list[Table]) -> str:
    names = [t.name for t in tables]
    near = _close(missing.strip('"').split(".")[-1], names)
    text = f"the tables are: {', '.join(names)}."
    return text + (f" The closest: {', '.join(near)}." if near else "")


def function_hint(dialect: str) -> str:
    if dialect == "sqlite":
        return (
            "This is SQLite: dates are text 'YYYY-MM-DD HH:MM:SS'; use strftime('%Y-%m', ts), "
            "date(ts) or compare with ts >= '2026-03-01'."
        )
    return (
        "This is PostgreSQL: ts is a timestamp; use date_trunc('month', ts), "
        "extract(month from ts), ts::date or compare with ts >= '2026-03-01'."
    )


def type_hint(tables: list[Table], sql: str) -> str:
    named = _named_tables(sql, tables) or tables
    return "Column types: " + "; ".join(t.line() for t in named) + "."


def _named_tables(sql: str, tables: list[Table]) -> list[Table]:
    words = {w.lower() for w in _WORD.findall(sql)}
    return [t for t in tables if t.name.lower() in words]
