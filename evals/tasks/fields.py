"""Fields an environment adds to its tasks: one typed model under one key of the task file,
declared in the environment's own package and registered by the environments' registry
(``evals.registry``), so a new environment's tasks need no change to the task
model. A task file writes them at the task's top level, beside the question:

    {"id": "t1", "question": "What time is it?", "clock": {"zone": "UTC"}, "checks": [...]}

and the task holds them typed (``Task.fields_of(ClockFields)``). A model that is ``flat``
takes several keys of the task file, one per field (the MCP environment's ``mcpServers``,
``reading`` and ``intro``), still held as one value under its ``key``. A key no environment
has registered is refused like any unknown field, with its file and line. A task set may
write any of these keys once, at its top: each of its tasks without it takes it."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, ValidationError

from evals import installed


class TaskFields(BaseModel):
    """The fields one environment adds to a task, under the task file's key ``key``; where
    ``flat``, each field under a key of its own (its alias) at the task's top level."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    key: ClassVar[str]
    flat: ClassVar[bool] = False
    # The keys a task set's writer lifts to the set's top when every task has the same value.
    shared: ClassVar[tuple[str, ...]] = ()

    def asked(self) -> dict[str, Any]:
        """What these fields add to the task's hash (``Task.task_hash``), by name: what the
        model is asked, or what it runs on."""
        return {self.key: self.model_dump(exclude_none=True)}


F = TypeVar("F", bound=TaskFields)

# What a task field is held under inside the task; never a key of a task file.
HELD = "environment_fields"

_FIELDS: dict[str, type[TaskFields]] = {}


def file_keys(model: type[TaskFields]) -> dict[str, tuple[str, str | None]]:
    """The task-file keys ``model`` takes: each name -> (the model's key, the field's name)."""
    if not model.flat:
        return {model.key: (model.key, None)}
    keys: dict[str, tuple[str, str | None]] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        names = [info.serialization_alias or info.alias or name, name]
        if isinstance(alias, AliasChoices):
            names += [a for a in alias.choices if isinstance(a, str)]
        elif isinstance(alias, str):
            names.append(alias)
        for n in names:
            if keys.get(n, (model.key, name))[1] != name:
                raise TypeError(f"{model.__name__}: {n!r} names two of its fields")
            keys[n] = (model.key, name)
    return keys


def add(model: type[F], taken: set[str], only_check: bool = False) -> type[F]:
    """``model`` held under its key (``evals.tasks.model.register_fields``, which knows the
    keys the task model has: ``taken``); ``only_check``: refuse what cannot be, hold nothing."""
    key = getattr(model, "key", None)
    if not isinstance(key, str) or not key or key == HELD:
        raise TypeError(f"{model.__name__}: task fields name their key in a 'key' class variable")
    if key in taken or _FIELDS.get(key, model) is not model:
        raise ValueError(f"task field {key!r} is taken")
    keys, held = file_keys(model), _keys()
    for name in keys:
        if name in taken or held.get(name, keys[name])[0] != key:
            raise ValueError(f"task field {name!r} is taken")
    if not only_check:
        _FIELDS[key] = model
    return model


def _keys() -> dict[str, tuple[str, str | None]]:
    """Every task-file key a registered model takes: name -> (the model's key, the field)."""
    return {name: at for model in _FIELDS.values() for name, at in file_keys(model).items()}


def split(data: Any) -> Any:
    """A task file's task with the registered keys moved under :data:`HELD` (what the task
    model validates); anything else as given."""
    if isinstance(data, dict) and HELD in data:
        raise ValueError(
            f"{HELD!r} is not a task field: write each environment's fields at the top"
        )
    # Whoever validates a task, the environments' fields are known (registered once).
    installed.load()
    keys = _keys()
    if not isinstance(data, dict) or not (set(data) & set(keys)):
        return data
    held: dict[str, Any] = {}
    for name, value in data.items():
        if name not in keys:
            continue
        key, field = keys[name]
        if field is None:
            held[key] = value
        else:
            held.setdefault(key, {})[name] = value
    return {**{k: v for k, v in data.items() if k not in keys}, HELD: held}


def given_to(own: dict[str, TaskFields], shared: dict[str, TaskFields]) -> dict[str, TaskFields]:
    """A task's fields with those its set writes once, at its top (``shared``), where the task
    has none of its own: a whole model it lacks, and of a flat model each field it leaves
    empty (the MCP servers of a task that names only its reading calls)."""
    out = dict(own)
    for key, value in shared.items():
        mine = out.get(key)
        if mine is None:
            out[key] = value.model_copy()
        elif value.flat:
            names = type(value).model_fields
            empty = {n: getattr(value, n) for n in names if getattr(mine, n) is None}
            if any(v is not None for v in empty.values()):
                out[key] = mine.model_copy(update=empty)
    return out


def at_top(held: dict[str, Any]) -> dict[str, Any]:
    """The held fields (as dumped) at a task's top level, the way a task file writes them."""
    out: dict[str, Any] = {}
    for key, value in held.items():
        model = _FIELDS.get(key)
        if model is not None and model.flat and isinstance(value, dict):
            out.update(value)
        else:
            out[key] = value
    return out


def lifted() -> list[str]:
    """The keys a task set's writer lifts to its top when its tasks share the value."""
    return [name for model in _FIELDS.values() for name in model.shared]


class TaskFieldErrors(ValueError):
    """What was wrong with a task's fields, each problem with its path from the task's top
    level as the task file writes it (``mcpServers.git.command``), so the file's reader can
    name its line."""

    def __init__(self, found: list[tuple[tuple[str | int, ...], str]]) -> None:
        self.found = found
        super().__init__("; ".join(".".join(map(str, path)) + ": " + msg for path, msg in found))


def validated(held: dict[str, Any]) -> dict[str, TaskFields]:
    """Each held value read by its key's model (a model already read stays as it is)."""
    out: dict[str, TaskFields] = {}
    found: list[tuple[tuple[str | int, ...], str]] = []
    for key, value in held.items():
        model = _FIELDS.get(key)
        if model is None:
            raise ValueError(f"no environment declares the task field {key!r}")
        try:
            out[key] = value if isinstance(value, model) else model.model_validate(value)
        except ValidationError as exc:  # the field's own path, which pydantic drops here
            top: tuple[str | int, ...] = () if model.flat else (key,)
            found += [((*top, *e["loc"]), e["msg"]) for e in exc.errors()]
    if found:
        raise TaskFieldErrors(found)
    return out
