"""A workspace of files: the file tools over a fresh folder holding the task's files (the
seed files where it names none)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from evals.environments.base import Gathering, Reading, scripted_calls
from evals.tasks import Task, load_tasks
from evals.tasks.sources import SPLITS, Source
from evals.workspace import generate
from evals.workspace.claims import about_files
from evals.workspace.data import WorkspaceData
from evals.workspace.fields import RepositoryRef
from harness.setup import Setup
from harness.state import RunState
from harness.tools import default_tools, listed_names
from harness.workspace import SEED_FILES, create_workspace


class _Opened:
    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        yield Setup(default_tools(), create_workspace(folder, files=task.workspace))

    def record(self, task: Task, state: RunState | None) -> WorkspaceData:
        return WorkspaceData()


PICK_FILES = "Choose the files you need to read to answer the question."


class WorkspaceEnvironment:
    name = "workspace"
    tool_names = frozenset(t.name for t in default_tools())
    default_preset = "all-helps"  # the sweep's best for the default model on files6
    data = WorkspaceData  # nothing beyond what every record keeps
    # A generated git history laid out in the workspace, under a task's ``repository`` key.
    task_fields = (RepositoryRef,)
    sources = (
        Source(
            "files",
            "questions over a workspace of three to six files",
            SPLITS,
            lambda seed, n, out, split: load_tasks(generate.write(seed, n, out, split)),
        ),
    )
    texts = (PICK_FILES,)
    # What a question-blind guess is worth under a workflow here (the workflows' report).
    under_workflows = (
        "Under a workflow the code lists and reads every file (route: those the model picks), "
        "so the evidence checks pass whatever the model says and only the answer decides; "
        "under the agent loop the model must fetch the evidence itself."
    )

    def false_claims(self, task: Task, answer: str | None) -> list[str] | None:
        """What the answer states falsely of the task's files (``evals.workspace.claims``); None
        for a workspace the task set does not hold (a git repository's)."""
        if task.fields_of(RepositoryRef) is not None:
            return None
        return about_files(SEED_FILES if task.workspace is None else task.workspace, answer)

    def holds(self, task: Task) -> bool:
        return True  # every task that names nothing else runs on files

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _Opened:
        return _Opened()

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        """List the workspace and read every file; the contents by file name."""
        files = task.workspace if task.workspace is not None else SEED_FILES
        workspace = create_workspace(scratch / task.id / "workspace", files=files)
        names = sorted(files)
        calls = [("list_files", {}), *(("read_file", {"path": n}) for n in names)]
        state, results = await scripted_calls(task.question, calls, default_tools(), workspace)
        listed = listed_names(results[0])
        return Reading(state, listed or names, dict(zip(names, results[1:], strict=True)))

    async def gather(self, steps: Gathering, route: bool = False, repair: bool = False) -> None:
        """List the files and read each one (``route``: the ones the model picks; a read is not
        repaired)."""
        (listing,) = await steps.run_tools([("list_files", {})])
        names = listed_names(steps.content(listing))
        if route:
            names = await steps.pick("files", names, PICK_FILES)
        if names:
            await steps.run_tools([("read_file", {"path": n}) for n in names])
