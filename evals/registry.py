"""Every environment a task can run on, one line each; a task runs on the first that holds
it (the workspace, last, holds every task). Environments other packages declare under the
``loopbench.environments`` entry point (``harness.plugins``) come first, so a plugin's holds
the tasks it claims. Each environment, built in or a plugin's, enters through ``installed``,
which registers its record data, task fields, check kinds and judges (``base.Environment``),
so its records read typed and its task files load. Every reader of a task or run file loads
this module first (``evals.installed.load``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.database.environment import DatabaseEnvironment
from evals.environments.base import Environment
from evals.errors import EvalError
from evals.mcp.environment import McpEnvironment
from evals.record import Data, RunRecord, own_settings, register
from evals.tasks import Task, TaskFields, register_check, register_fields, register_judge
from evals.tasks.sources import Source
from evals.tau2.environment import Tau2Environment
from evals.workspace.environment import WorkspaceEnvironment
from harness.plugins import loaded, loaded_from
from harness.policies.registry import SETTINGS

GROUP = "loopbench.environments"
_NEEDS = ("name", "tool_names", "default_preset", "holds", "open", "read_all")


def installed(environment: Environment) -> Environment:
    """``environment``, its record data model, task fields, check kinds and judges registered.
    What is not an environment, or declares what cannot be registered (record data under
    another name, a task field's key or a check kind's tag already taken), is refused, saying
    why, before anything is registered."""
    lacking = [a for a in _NEEDS if not hasattr(environment, a)]
    if lacking:
        raise TypeError(f"{environment!r} is not an environment: it has no {', '.join(lacking)}")
    name = environment.name
    data: Any = getattr(environment, "data", None)
    fields: Any = tuple(getattr(environment, "task_fields", ()))
    if data is not None:
        if not (isinstance(data, type) and issubclass(data, Data)):
            raise TypeError(f"environment {name!r}: data is not an evals.record.Data")
        if data.model_fields["name"].default != name:
            raise ValueError(f"environment {name!r}: its record data names another environment")
        register(data, only_check=True)
    for model in fields:
        if not (isinstance(model, type) and issubclass(model, TaskFields)):
            raise TypeError(f"environment {name!r}: {model!r} is not TaskFields")
        register_fields(model, only_check=True)
    kinds: Any = tuple(getattr(environment, "check_kinds", ()))
    for model in kinds:
        if not isinstance(model, type):
            raise TypeError(f"environment {name!r}: check kind {model!r} is not a model")
        register_check(model, only_check=True)
    judges: Any = tuple(getattr(environment, "judges", ()))
    if not all(isinstance(j, str) and j for j in judges):
        raise TypeError(f"environment {name!r}: its judges are names")
    found: Any = tuple(getattr(environment, "sources", ()))
    if not all(isinstance(s, Source) for s in found):
        raise TypeError(f"environment {name!r}: its sources are evals.tasks.sources.Source")
    settings: Any = tuple(getattr(environment, "settings", ()))
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise ValueError(f"environment {name!r}: no setting {', '.join(map(repr, unknown))}")
    own_settings(name, settings, only_check=True)
    if data is not None:
        register(data)
    for model in fields:
        register_fields(model)
    for model in kinds:
        register_check(model)
    for judge in judges:
        register_judge(judge)
    own_settings(name, settings)
    return environment


BUILT_IN: tuple[Environment, ...] = (
    Tau2Environment(),
    McpEnvironment(),
    DatabaseEnvironment(),
    WorkspaceEnvironment(),
)


def _plugins() -> list[Environment]:
    """The environments of other packages, each refused (with a warning naming it) if its name
    is taken, by this project's or an earlier plugin's."""
    taken = {e.name for e in BUILT_IN}
    generated = {s.name for e in BUILT_IN for s in getattr(e, "sources", ())}

    def accepted(found: Any) -> Environment:
        environment: Environment = found() if isinstance(found, type) else found
        name = getattr(environment, "name", None)
        if name in taken:
            raise ValueError(f"an environment named {name!r} is already registered")
        names = [getattr(s, "name", None) for s in getattr(environment, "sources", ())]
        clash = [n for n in names if n in generated]
        if clash:
            raise ValueError(f"environment {name!r}: a task source named {clash[0]!r} is taken")
        installed(environment)
        taken.add(environment.name)
        generated.update(n for n in names if isinstance(n, str))
        return environment

    return loaded(GROUP, accepted)


# Built in or from a plugin, an environment is registered by ``installed`` (its record data,
# task fields, check kinds and judges), once, when ``evals.installed.load`` (or any import)
# first loads this module.
_BUILT: tuple[Environment, ...] = tuple(installed(e) for e in BUILT_IN)
ENVIRONMENTS: tuple[Environment, ...] = (*_plugins(), *_BUILT)
# The distribution each plugin environment came from, by environment name.
PACKAGES: dict[str, str] = {
    e.name: package for e in ENVIRONMENTS if (package := loaded_from(GROUP, e)) is not None
}


def environment_of(task: Task) -> Environment:
    return next(e for e in ENVIRONMENTS if e.holds(task))


def recorded(environment: Environment, data: Data) -> Data:
    """``data`` as a record keeps it: with the distribution that installed ``environment``,
    where a plugin did."""
    package = PACKAGES.get(environment.name)
    return data if package is None else data.model_copy(update={"package": package})


def environment_of_record(record: RunRecord) -> Environment:
    """The environment a task run's record came from: the one it names. One that no installed
    package provides is an :class:`EvalError` that says what to install."""
    for environment in ENVIRONMENTS:
        if environment.name == record.environment.name:
            return environment
    name, package = record.environment.name, record.environment.package
    install = (
        f"install {package} (pip install {package}), which provides it"
        if package
        else "install the plugin that provides it"
    )
    raise EvalError(
        f"the records of {record.task_id} name the environment {name!r}, which no installed "
        f"package provides: {install}, then read them again"
    )


def held_by(tasks: Sequence[Task]) -> list[tuple[Environment, list[Task]]]:
    """Each environment some of ``tasks`` run on, with those tasks, in registry order."""
    held: dict[str, list[Task]] = {}
    for task in tasks:
        held.setdefault(environment_of(task).name, []).append(task)
    return [(e, held[e.name]) for e in ENVIRONMENTS if e.name in held]


def sources() -> dict[str, Source]:
    """Every generated task source the environments declare, by name (``loopbench generate
    --source``; each checked as its environment entered, a taken name refused)."""
    found = {s.name: s for e in ENVIRONMENTS for s in getattr(e, "sources", ())}
    return dict(sorted(found.items()))


def tool_names() -> frozenset[str]:
    """Every tool any environment can offer."""
    return frozenset().union(*(e.tool_names for e in ENVIRONMENTS))
