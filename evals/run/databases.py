"""The databases an eval's tasks run on: each task names one (a generated bank and the
fingerprint of its rows); the eval opens it once, as a SQLite file built in its scratch folder
or, with ``--db postgresql://...``, as that bank's schema on the server, checked to hold the
same rows."""

from __future__ import annotations

from pathlib import Path

from evals.errors import EvalError
from evals.tasks import DatabaseRef
from evals.tasks.sql.build import check_postgres, sqlite_file
from harness.sql import Database, SQLError, open_database
from harness.sql.postgres import public_url


def is_postgres(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


class Databases:
    """``url``: None for SQLite (the default), or a PostgreSQL URL."""

    def __init__(self, url: str | None, scratch: Path) -> None:
        if url is not None and not is_postgres(url):
            raise EvalError(f"--db takes a postgresql:// URL (SQLite needs none), not {url!r}")
        self.url = url
        self.scratch = scratch
        self._open: dict[tuple[int, str], Database] = {}

    @property
    def name(self) -> str:
        return public_url(self.url) if self.url else "sqlite"

    def for_task(self, ref: DatabaseRef) -> Database:
        key = (ref.seed, ref.fingerprint)
        if key not in self._open:
            try:
                if self.url is None:
                    path = sqlite_file(ref.seed, self.scratch / "databases", ref.fingerprint)
                    self._open[key] = open_database(str(path))
                else:
                    schema = check_postgres(self.url, ref.seed, ref.fingerprint)
                    self._open[key] = open_database(self.url, schema)
            except SQLError as exc:
                raise EvalError(str(exc)) from exc
        return self._open[key]
