"""Tools from MCP servers: a task that names ``mcpServers`` runs with the tools those servers
offer (:mod:`harness.mcp.servers`), started afresh for each task run over a folder laid out
for it, at a path named by the task (the same in every run: see STABLE_ROOT): the task's files
(the seed files where it names none), its git repository when it names one, and a copy of its
bank's SQLite file when it names a database (``{database}``), so a server that writes changes
only that run's copy.

Placeholders the servers' entries may use: ``{workspace}`` (the run's folder) and
``{database}`` (the copy of the bank). A server that fails is the machinery's fault: the task
run is an error, and the eval goes on with the next task.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from evals.database.fields import DatabaseRef
from evals.database.sql.build import sqlite_file
from evals.environments.base import Reading, filled, scripted_calls
from evals.errors import EvalError
from evals.mcp import git
from evals.mcp.data import McpData, McpServerData
from evals.mcp.fields import McpFields
from evals.mcp.git import build_repository
from evals.tasks import Task
from evals.tasks.sources import Source
from evals.workspace.fields import RepositoryRef
from harness.errors import ToolServerFailed
from harness.mcp.servers import ServerRecord, open_servers, resolve_command
from harness.setup import Setup
from harness.state import RunState
from harness.workspace import Workspace, create_workspace

INTRO = (
    "You are a careful assistant. Use the tools to look before you answer. The folder you "
    "work on is {workspace}."
)
PLACEHOLDERS = ("workspace", "database")
_BRACED = ["{" + p + "}" for p in PLACEHOLDERS]


class _Opened:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        # What each task run's servers said of themselves, by run id, for its record.
        self.started: dict[str, list[ServerRecord]] = {}
        self.databases: dict[str, str] = {}

    def _lay_out(self, task: Task, folder: Path) -> tuple[Workspace, dict[str, str]]:
        """The task's folder laid out: its workspace, and the placeholders' values."""
        workspace = create_workspace(folder / "workspace", files=task.workspace)
        values = {"workspace": str(workspace.root)}
        repository, database = task.fields_of(RepositoryRef), task.fields_of(DatabaseRef)
        if repository is not None:
            build_repository(repository, workspace.root)
        if database is not None:
            bank = sqlite_file(database.seed, self.scratch / "databases", database.fingerprint)
            copy = folder / "database.sqlite"
            shutil.copyfile(bank, copy)
            values["database"] = str(copy)
        return workspace, values

    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        mcp = task.fields_of(McpFields)
        if mcp is None or mcp.mcp_servers is None:
            raise EvalError(f"task {task.id} names no MCP servers")
        key = folder.parent.name  # the run id (evals.run.taskrun lays out RUN_ID/workspace)
        stable = _claim(task)
        try:
            workspace, values = self._lay_out(task, stable)
            servers = open_servers(mcp.mcp_servers, values, folder.parent / "mcp-logs")
            async with servers as started:
                self.started[key] = started.records
                if "database" in values:
                    self.databases[key] = Path(values["database"]).name
                intro = (mcp.intro or INTRO).replace("{workspace}", values["workspace"])
                yield Setup(started.tools, workspace, intro=intro)
        finally:
            shutil.rmtree(stable, ignore_errors=True)

    def record(self, task: Task, state: RunState | None) -> McpData:
        key = state.run_id if state is not None else ""
        started = self.started.pop(key, None)
        servers = None if started is None else [McpServerData(**r.as_dict()) for r in started]
        return McpData(servers=servers, database=self.databases.pop(key, None))


# Where a task run's folder is laid out: a path named by the task alone, so the prompt and the
# results that show it read the same in every run (a fresh temporary name would make two greedy
# runs of one task differ). A run of the same task at the same time takes the next free one.
# The root is this user's own (0700): in the shared temporary folder, a root another user made
# could have a run's folder swapped for a link between its creation and the writes into it.
STABLE_ROOT = Path(tempfile.gettempdir()) / f"loopbench-mcp-{os.getuid()}"


def _private_root(root: Path) -> Path:
    """``root`` made (0700) or found as this user's own folder: never a link, never another
    user's, never open to others; anything else is refused, naming the fix."""
    with suppress(FileExistsError):
        root.mkdir(mode=0o700)
    found = os.lstat(root)
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode):
        raise EvalError(f"{root} is not a folder (a link or a file): remove it and run again")
    if found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise EvalError(
            f"{root} belongs to another user or is open to others (mode "
            f"{stat.S_IMODE(found.st_mode):o}): the MCP task folders need a folder of this "
            "user's alone; remove it and run again"
        )
    return root


def folder_name(task: Task) -> str:
    """The name of a task's folder: stable for the task (its id and question), and saying
    nothing of either, since the model reads the path (a folder named ``12-missing`` told the
    model the answer)."""
    digest = hashlib.sha256(f"{task.id}\0{task.question}".encode()).hexdigest()
    return f"task-{digest[:10]}"


def _claim(task: Task) -> Path:
    """A fresh folder for a run of ``task`` under STABLE_ROOT, the same one each time it is
    free."""
    root = _private_root(STABLE_ROOT)
    name = folder_name(task)
    for n in range(1, 1000):
        folder = root / (name if n == 1 else f"{name}-{n}")
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder
    raise EvalError(f"no free folder for task {task.id} under {root}")


class McpEnvironment:
    name = "mcp"
    # A server's tools are known only once it runs; a call written as text that gives
    # arguments is cut from an answer whatever it names (evals.scoring.evidence.stated).
    tool_names: frozenset[str] = frozenset()
    # The loop's controls that name none of this project's tools (all-helps forces list_files
    # first and its prompt speaks of it): a server's tools meet the same loop as ours.
    default_preset = "penalized"
    data = McpData  # the servers as started, with their tools' schema hashes
    # The servers, the reading calls and the intro, each under a key of its own.
    task_fields = (McpFields,)
    sources = (
        Source(
            "git",
            "questions about a generated git history, through mcp-server-git (an MCP server)",
            git.SPLITS,
            git.write,
        ),
    )

    def holds(self, task: Task) -> bool:
        mcp = task.fields_of(McpFields)
        return mcp is not None and mcp.mcp_servers is not None

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _Opened:
        """Every server's command found, and every placeholder one known, before any task."""
        for task in tasks:
            mcp = task.fields_of(McpFields)
            for name, config in ((mcp and mcp.mcp_servers) or {}).items():
                unknown = config.placeholders() - set(PLACEHOLDERS)
                if unknown:
                    raise EvalError(
                        f"task {task.id}: MCP server {name!r} uses {{{sorted(unknown)[0]}}}, "
                        f"not a placeholder (they are: {', '.join(_BRACED)})"
                    )
                if "database" in config.placeholders() and task.fields_of(DatabaseRef) is None:
                    raise EvalError(
                        f"task {task.id}: MCP server {name!r} uses {{database}} but the task "
                        "names no database"
                    )
                try:
                    resolve_command(config.command)
                except ToolServerFailed as exc:
                    raise EvalError(f"task {task.id}: {exc}") from exc
        if db is not None and any(t.fields_of(DatabaseRef) for t in tasks):
            raise EvalError(
                "the MCP environment hands a server a copy of the bank as a SQLite file; "
                "--db applies to run_sql's tasks only"
            )
        return _Opened(scratch)

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        """The task's ``reading`` calls made through the real loop and the servers' tools:
        each result by its call (``TOOL ARGUMENTS``), and all of them as the results a
        question-blind answer may copy from."""
        mcp = task.fields_of(McpFields)
        reading = mcp.reading if mcp is not None else None
        if not reading:
            raise EvalError(
                f"task {task.id} names no reading (the calls that fetch what its checks ask "
                "for), so no strategy can read it first"
            )
        opened = self.open([task], None, scratch)
        folder = scratch / task.id / "reading" / "workspace"
        async with opened.setup(task, folder) as setup:
            root = str(setup.workspace.root)
            calls = [(tool, filled(args, root)) for tool, args in reading]
            state, results = await scripted_calls(
                task.question, calls, setup.tools, setup.workspace
            )
        labels = [f"{tool} {json.dumps(args, sort_keys=True)}" for tool, args in reading]
        contents = dict(zip(labels, results, strict=True))
        return Reading(state, [], contents, results="\n".join(results))
