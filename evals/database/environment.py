"""A database: the SQL tools over the bank a task names (a generated one and the fingerprint
of its rows). The eval opens each bank once, as a SQLite file built in its scratch folder or,
with ``--db postgresql://...``, as that bank's schema on the server, checked to hold the same
rows. A task's record names the database and the audit of every query it ran."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from evals.database import figures as analyst
from evals.database import sql
from evals.database.data import DatabaseData
from evals.database.fields import DatabaseRef
from evals.database.sql import sql_intro
from evals.database.sql.build import check_postgres, sqlite_file
from evals.database.sql.questions import reading_queries
from evals.environments.base import Figures, Gathering, Reading, scripted_calls
from evals.errors import EvalError
from evals.tasks import Task
from evals.tasks.sources import SPLITS, Source
from harness.setup import Setup
from harness.sql import (
    DESCRIBE_TOOL,
    RUN_SQL_TOOL,
    Database,
    SQLError,
    is_postgres_url,
    open_database,
    schema,
    sql_tools,
)
from harness.sql.postgres import public_url
from harness.sql.tools import ROW_CAP_SETTING, STATEMENT_TIMEOUT_SETTING
from harness.state import RunState
from harness.workspace import create_workspace


class Databases:
    """``url``: None for SQLite (the default), or a PostgreSQL URL."""

    def __init__(self, url: str | None, scratch: Path) -> None:
        if url is not None and not is_postgres_url(url):
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


def sql_audit(state: RunState) -> list[dict[str, Any]]:
    """One entry per run_sql call the tool answered itself, in order: what ran, how long, how
    many rows, what went wrong (from the facts the tool reported, never from its text)."""
    return [
        {"turn": r.turn, **r.facts}
        for r in state.tool_log
        if r.name == RUN_SQL_TOOL and r.facts and "sql" in r.facts
    ]


def _ref(task: Task) -> DatabaseRef:
    ref = task.fields_of(DatabaseRef)
    if ref is None:
        raise EvalError(f"task {task.id} names no database")
    return ref


PICK_TABLES = "Choose the tables whose first rows you need to see to answer the question."
WRITE_QUERY = "Write one SQL query that answers the question, and run it with run_sql."
REPAIR = "That query failed; the error is above. Write one corrected query and run it with run_sql."
SAMPLE_ROWS = 5

# What the system prompt shows under ``overview_in_prompt``: the schema, as describe lists it.
OVERVIEW = "The database's tables, as describe lists them:\n{schema}"


class _Opened:
    def __init__(self, databases: Databases) -> None:
        self.databases = databases

    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        database = self.databases.for_task(_ref(task))
        yield Setup(
            sql_tools(database),
            create_workspace(folder, files={}),
            intro=sql_intro(database.dialect),
            overview=OVERVIEW.format(schema=schema(database.tables())),
        )

    def record(self, task: Task, state: RunState | None) -> DatabaseData:
        audit = None if state is None else sql_audit(state)
        return DatabaseData(database=self.databases.name, audit=audit)


class DatabaseEnvironment:
    name = "database"
    tool_names = frozenset({RUN_SQL_TOOL, DESCRIBE_TOOL})
    default_preset = "analyst"  # the chapter's loop: 8 steps, hinted errors, parallel calls
    # The preset settings only its tasks read: the SQL tools' limits.
    settings = (STATEMENT_TIMEOUT_SETTING, ROW_CAP_SETTING)
    data = DatabaseData  # where the data was, and the audit of every query
    task_fields = (DatabaseRef,)  # the bank a task asks about, under its ``database`` key
    sources = (
        Source(
            "sql",
            "an analyst's questions about a generated bank, asked through run_sql and describe",
            SPLITS,
            lambda seed, n, out, split: sql.write(seed, n, out, split)[1],
        ),
    )
    # The analyst's figures (steps, SQL errors and recoveries, timeouts, rows), under the
    # summary's ``analyst`` key.
    figures = Figures("analyst", "What the chapter measures", analyst.figures, analyst.markdown)
    texts = (PICK_TABLES, WRITE_QUERY, REPAIR)
    # What a question-blind guess is worth under a workflow here (the workflows' report).
    under_workflows = (
        "The evidence check asks for a query result that holds the answer; the workflows' "
        "queries are the model's, so a guess is credited only where its query found it."
    )

    def holds(self, task: Task) -> bool:
        return task.fields_of(DatabaseRef) is not None

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _Opened:
        """Every bank the tasks name, opened (and on PostgreSQL checked) before any task."""
        databases = Databases(db, scratch)
        refs = [r for r in (t.fields_of(DatabaseRef) for t in tasks) if r is not None]
        for ref in {(r.seed, r.fingerprint): r for r in refs}.values():
            databases.for_task(ref)
        return _Opened(databases)

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        """Describe the database, read every table, and run the question's gold SQL, so every
        result a grounded check asks for is there; each result by what was asked."""
        ref = _ref(task)
        path = sqlite_file(ref.seed, scratch / "databases", ref.fingerprint)
        queries = reading_queries(task.question)
        calls = [(DESCRIBE_TOOL, {}), *((RUN_SQL_TOOL, {"query": q}) for q in queries)]
        workspace = create_workspace(scratch / task.id / "workspace", files={})
        tools = sql_tools(open_database(str(path)))
        state, results = await scripted_calls(task.question, calls, tools, workspace)
        contents = dict(zip([DESCRIBE_TOOL, *queries], results, strict=True))
        return Reading(state, [], contents, results="\n".join(contents.values()))

    async def gather(self, steps: Gathering, route: bool = False, repair: bool = False) -> None:
        """Describe the database, then one query the model writes, run by the code (``route``:
        first the first rows of the tables the model picks; ``repair``: one more query when the
        first one failed)."""
        (described,) = await steps.run_tools([(DESCRIBE_TOOL, {})])
        if route:
            tables = list((described.facts or {}).get("tables") or [])
            chosen = await steps.pick("tables", tables, PICK_TABLES)
            await steps.run_tools(
                [
                    (RUN_SQL_TOOL, {"query": f"SELECT * FROM {t} LIMIT {SAMPLE_ROWS}"})
                    for t in chosen
                ]
            )
        run_sql = steps.tools[RUN_SQL_TOOL]
        text = WRITE_QUERY
        for _ in range(2 if repair else 1):
            reply = await steps.ask(text, offer=[run_sql])
            if not reply.get("tool_calls"):
                return
            ran = await steps.answer_calls()
            if all(r.ok for r in ran):
                return
            text = REPAIR
