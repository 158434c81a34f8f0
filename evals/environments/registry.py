"""Every environment a task can run on, one line each; a task runs on the first that holds
it (the workspace, last, holds every task)."""

from __future__ import annotations

from collections.abc import Sequence

from evals.environments.base import Environment
from evals.environments.database import DatabaseEnvironment
from evals.environments.mcp import McpEnvironment
from evals.environments.tau2 import Tau2Environment
from evals.environments.workspace import WorkspaceEnvironment
from evals.record import RunRecord
from evals.tasks import Task

ENVIRONMENTS: tuple[Environment, ...] = (
    Tau2Environment(),
    McpEnvironment(),
    DatabaseEnvironment(),
    WorkspaceEnvironment(),
)


def environment_of(task: Task) -> Environment:
    return next(e for e in ENVIRONMENTS if e.holds(task))


def environment_of_record(record: RunRecord) -> Environment:
    """The environment a task run's record came from: the one it names."""
    return next(e for e in ENVIRONMENTS if e.name == record.environment.name)


def held_by(tasks: Sequence[Task]) -> list[tuple[Environment, list[Task]]]:
    """Each environment some of ``tasks`` run on, with those tasks, in registry order."""
    held: dict[str, list[Task]] = {}
    for task in tasks:
        held.setdefault(environment_of(task).name, []).append(task)
    return [(e, held[e.name]) for e in ENVIRONMENTS if e.name in held]


def tool_names() -> frozenset[str]:
    """Every tool any environment can offer."""
    return frozenset().union(*(e.tool_names for e in ENVIRONMENTS))
