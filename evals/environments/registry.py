"""Every environment a task can run on, one line each; a task runs on the first that holds
it (the workspace, last, holds every task). Environments other packages declare under the
``loopbench.environments`` entry point (``harness.plugins``) come first, so a plugin's holds
the tasks it claims. Each environment's record data and task fields (``base.Environment``) are
registered as it enters, so its records read typed and its task files load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.environments.base import Environment
from evals.environments.database import DatabaseEnvironment
from evals.environments.mcp import McpEnvironment
from evals.environments.tau2 import Tau2Environment
from evals.environments.workspace import WorkspaceEnvironment
from evals.record import Data, RunRecord, register
from evals.tasks import Task, TaskFields, register_fields
from harness.plugins import loaded

GROUP = "loopbench.environments"
_NEEDS = ("name", "tool_names", "default_preset", "holds", "open", "read_all")


def installed(environment: Environment) -> Environment:
    """``environment``, its record data model and task fields registered; what is not an
    environment is refused, saying what it lacks."""
    lacking = [a for a in _NEEDS if not hasattr(environment, a)]
    if lacking:
        raise TypeError(f"{environment!r} is not an environment: it has no {', '.join(lacking)}")
    data: Any = getattr(environment, "data", None)
    if data is not None:
        if not (isinstance(data, type) and issubclass(data, Data)):
            raise TypeError(f"environment {environment.name!r}: data is not an evals.record.Data")
        register(data)
    for fields in getattr(environment, "task_fields", ()):
        if not (isinstance(fields, type) and issubclass(fields, TaskFields)):
            raise TypeError(f"environment {environment.name!r}: {fields!r} is not TaskFields")
        register_fields(fields)
    return environment


BUILT_IN: tuple[Environment, ...] = (
    Tau2Environment(),
    McpEnvironment(),
    DatabaseEnvironment(),
    WorkspaceEnvironment(),
)


def _plugin(found: Any) -> Environment:
    environment = found() if isinstance(found, type) else found
    if getattr(environment, "name", None) in {e.name for e in BUILT_IN}:
        raise ValueError(f"an environment named {environment.name!r} is already registered")
    return installed(environment)


ENVIRONMENTS: tuple[Environment, ...] = (*loaded(GROUP, _plugin), *BUILT_IN)


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
