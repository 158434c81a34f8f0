"""The same questions over two tool surfaces, so what a surface is worth is measured task by
task: this project's tools served over MCP (``loopbench-mcp serve``) against a community server
from the registries, both through the MCP environment, scored by the same checks.

* ``files``: a file task set (files6, a generated one) with our ``list_files`` and
  ``read_file`` (``ours``), or the reference filesystem server from npm (``filesystem``: its
  read-only tools).
* ``sql``: the SQL analyst's questions with our ``run_sql`` and ``describe`` (``ours``), or
  ``mcp-server-sqlite`` (``sqlite``: ``read_query``, ``list_tables``, ``describe_table``, which
  the task file vouches read-only: the server declares no annotations), each over a copy of the
  task's bank.

The checks are made surface-blind: an ``observed`` check of one of our tools becomes a
``received`` check of the same strings in any result (our listing's unit, "bytes", left out:
the filesystem server writes sizes its own way), ``files_read`` becomes one ``received`` check
per file with that file's first line, a ``presence`` check takes a listing from the
file surfaces' listing tools and a read from their read tools, and ``observed_value`` of ``run_sql``
takes the value from any tool's result. Each task names the calls its surface needs to fetch
that evidence (``reading``), for the question-blind strategies.
"""

from __future__ import annotations

from typing import Any

from evals.database.fields import DatabaseRef
from evals.database.sql.bank import TABLES
from evals.database.sql.questions import reading_queries
from evals.errors import EvalError
from evals.mcp.fields import McpFields
from evals.tasks import (
    FilesRead,
    Observed,
    ObservedValue,
    Presence,
    Received,
    ServerConfig,
    Task,
    TaskSet,
)
from harness.workspace import SEED_FILES

OURS = "ours"
SURFACES = {"files": ("ours", "filesystem"), "sql": ("ours", "sqlite")}
_OUR_SERVER = "loopbench-mcp"
FILESYSTEM_READS = [
    "read_text_file", "read_multiple_files", "list_directory", "list_directory_with_sizes",
    "directory_tree", "search_files", "get_file_info", "list_allowed_directories",
]  # fmt: skip
# What a ``presence`` check takes, on either file surface (one set of checks for both, so a
# pair compares them; a tool a surface lacks is never called there): the tools that read one
# file by its ``path`` (a missing file's error, a present file's contents), ours then the
# filesystem server's, and those whose results list the folder (never a read's result, which
# may name a file it failed to find).
PRESENCE_READS = ["read_file", "read_text_file", "get_file_info"]
PRESENCE_LISTS = [
    "list_files", "list_directory", "list_directory_with_sizes", "directory_tree", "search_files",
]  # fmt: skip
SQLITE_READS = ["read_query", "list_tables", "describe_table"]
SERVERS: dict[tuple[str, str], dict[str, ServerConfig]] = {
    ("files", "ours"): {
        "files": ServerConfig(command=_OUR_SERVER, args=["serve", "--workspace", "{workspace}"])
    },
    ("files", "filesystem"): {
        "filesystem": ServerConfig(
            command="mcp-server-filesystem", args=["{workspace}"], allow=FILESYSTEM_READS
        )
    },
    ("sql", "ours"): {
        "sql": ServerConfig(command=_OUR_SERVER, args=["serve", "--db", "{database}"])
    },
    ("sql", "sqlite"): {
        "sqlite": ServerConfig(
            command="mcp-server-sqlite",
            args=["--db-path", "{database}"],
            allow=SQLITE_READS,
            read_only=SQLITE_READS,
        )
    },
}
FILES_INTRO = (
    "You are a careful assistant working in a folder of files at {workspace}. Use the tools to "
    "look at the files before you answer."
)
SQL_INTRO = (
    "You are a careful data analyst. You answer questions about a bank's data from a read-only "
    "SQLite database with the tables branches, customers, accounts and transactions. Use the "
    "tools to see their columns and to query them before you answer; give the figure or the "
    "names the data shows."
)
LISTING_UNIT = "bytes"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())


def _file_checks(task: Task) -> list[Any]:
    files = task.workspace if task.workspace is not None else SEED_FILES
    checks: list[Any] = []
    for check in task.checks:
        if isinstance(check, Observed):
            wanted = [s for s in check.result_contains if s != LISTING_UNIT]
            if not wanted and check.arguments and isinstance(check.arguments.get("path"), str):
                wanted = [_first_line(files[check.arguments["path"]])]
            checks.append(Received(kind="received", result_contains=wanted or list(files)))
        elif isinstance(check, Presence):
            update = {"lists": list(PRESENCE_LISTS), "reads": list(PRESENCE_READS)}
            checks.append(check.model_copy(update=update))
        elif isinstance(check, FilesRead):
            checks += [
                Received(kind="received", result_contains=[_first_line(files[f])])
                for f in check.files
            ]
        else:
            checks.append(check)
    return checks


def _file_reading(task: Task, surface: str) -> list[tuple[str, dict[str, Any]]]:
    names = sorted(task.workspace if task.workspace is not None else SEED_FILES)
    if surface == OURS:
        return [("list_files", {}), *(("read_file", {"path": n}) for n in names)]
    listing = ("list_directory_with_sizes", {"path": "{workspace}"})
    return [listing, *(("read_text_file", {"path": "{workspace}/" + n}) for n in names)]


def _sql_checks(task: Task) -> list[Any]:
    return [
        c.model_copy(update={"tool": None}) if isinstance(c, ObservedValue) else c
        for c in task.checks
    ]


def _sql_reading(task: Task, surface: str) -> list[tuple[str, dict[str, Any]]]:
    queries = reading_queries(task.question)
    if surface == OURS:
        return [("describe", {}), *(("run_sql", {"query": q}) for q in queries)]
    described = [("describe_table", {"table_name": t}) for t in TABLES]
    return [("list_tables", {}), *described, *(("read_query", {"query": q}) for q in queries)]


def over_surface(taskset: TaskSet, source: str, surface: str) -> TaskSet:
    """``taskset``'s questions over ``surface`` (``SURFACES[source]``), with surface-blind
    checks and the reading that surface needs."""
    if surface not in SURFACES.get(source, ()):
        known = ", ".join(f"{f}: {'/'.join(s)}" for f, s in SURFACES.items())
        raise EvalError(f"no surface {surface!r} for {source!r} (there are: {known})")
    tasks = []
    for task in taskset.tasks:
        if (task.fields_of(DatabaseRef) is not None) != (source == "sql"):
            raise EvalError(f"task {task.id} is not a {source} task")
        if source == "files":
            checks, reading = _file_checks(task), _file_reading(task, surface)
        else:
            checks, reading = _sql_checks(task), _sql_reading(task, surface)
        mcp = McpFields(
            mcp_servers=dict(SERVERS[(source, surface)]),
            reading=reading,
            intro=FILES_INTRO if source == "files" else SQL_INTRO,
        )
        tasks.append(
            task.model_copy(
                update={
                    "checks": checks,
                    "tools": None,  # the server's tools, as the tools setting offers them
                    "environment_fields": {**task.environment_fields, mcp.key: mcp},
                }
            )
        )
    return TaskSet(
        name=f"{taskset.name}-mcp-{surface}",
        description=f"{taskset.name} over MCP: {surface} tools ({source})",
        tasks=tasks,
    )
