"""The generated database made real: a SQLite file (built once per folder, checked by its
fingerprint) or a schema in a PostgreSQL database (``bank_s<seed>``), loaded by a role that
may write and read by one that may only SELECT."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from evals.database.sql.bank import META_TABLE, SCHEMA, TABLES, Bank, generate
from evals.errors import EvalError
from harness.sql.postgres import public_url


def schema_name(seed: int) -> str:
    return f"bank_s{seed}"


def _placeholders(n: int, mark: str) -> str:
    return ", ".join([mark] * n)


def sqlite_file(seed: int, folder: Path, fingerprint: str | None = None) -> Path:
    """The SQLite file of ``seed``'s bank in ``folder``, built if missing (atomically, so
    parallel evals never read half a file). A file whose data differs is rebuilt."""
    bank = generate(seed)
    if fingerprint is not None and bank.fingerprint != fingerprint:
        raise EvalError(
            f"the task set was generated from another version of bank {seed} "
            f"(fingerprint {fingerprint}; this code makes {bank.fingerprint}): generate it again"
        )
    path = folder / f"{schema_name(seed)}-{bank.fingerprint}.sqlite"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".sqlite.tmp")
    os.close(fd)
    conn = sqlite3.connect(tmp)
    try:
        _fill(conn, bank, "?")
        conn.commit()
    finally:
        conn.close()
    os.replace(tmp, path)
    return path


def _rows(bank: Bank, table: str, sqlite: bool) -> list[tuple[Any, ...]]:
    if not sqlite:
        return bank.rows[table]
    # SQLite stores amounts as numbers; a Decimal is not one of its types.
    return [tuple(float(v) if hasattr(v, "as_tuple") else v for v in r) for r in bank.rows[table]]


def _fill(conn: Any, bank: Bank, mark: str) -> None:
    sqlite = mark == "?"
    for statement in SCHEMA:
        conn.execute(statement)
    for table in TABLES:
        rows = _rows(bank, table, sqlite)
        sql = f"INSERT INTO {table} VALUES ({_placeholders(len(rows[0]), mark)})"
        if sqlite:
            conn.executemany(sql, rows)
        else:
            with conn.cursor() as cur:
                cur.executemany(sql, rows)
    conn.execute(f"CREATE TABLE {META_TABLE} (seed INTEGER, fingerprint TEXT)")
    conn.execute(f"INSERT INTO {META_TABLE} VALUES ({mark}, {mark})", (bank.seed, bank.fingerprint))


def load_postgres(url: str, seed: int, reader: str | None = None) -> str:
    """Load ``seed``'s bank into the schema ``bank_s<seed>`` of the database at ``url`` (a
    role that may create schemas), replacing an older copy, and let ``reader`` SELECT from it.
    Returns the schema's name; a copy with the same fingerprint is left as it is."""
    import psycopg
    from psycopg import sql

    bank = generate(seed)
    schema = schema_name(seed)
    with psycopg.connect(url, autocommit=False) as conn:
        if loaded_fingerprint(conn, schema) != bank.fingerprint:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
            _fill(conn, bank, "%s")
        if reader:
            who, where = sql.Identifier(reader), sql.Identifier(schema)
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(where, who))
            conn.execute(
                sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(where, who)
            )
        conn.commit()
    return schema


def loaded_fingerprint(conn: Any, schema: str) -> str | None:
    """The fingerprint of the bank loaded in ``schema``, or None when there is none."""
    from psycopg import sql

    found = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
        (schema, META_TABLE),
    ).fetchone()
    if not found:
        return None
    row = conn.execute(
        sql.SQL("SELECT fingerprint FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(META_TABLE)
        )
    ).fetchone()
    return str(row[0]) if row else None


def check_postgres(url: str, seed: int, fingerprint: str) -> str:
    """The schema of ``seed``'s bank in the database at ``url``, after checking that it holds
    the same rows the task set was generated from; an error that says how to load it if not."""
    import psycopg

    schema = schema_name(seed)
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            found = loaded_fingerprint(conn, schema)
    except psycopg.Error as exc:
        raise EvalError(f"cannot read the database at {public_url(url)}: {exc}") from exc
    if found != fingerprint:
        what = "is not loaded" if found is None else f"holds other data ({found})"
        raise EvalError(
            f"bank {seed} {what} in schema {schema} of {public_url(url)}: load it with "
            f"`python -m evals load-db --seed {seed}` (make serve-postgres loads the committed "
            "task sets' banks)"
        )
    return schema
