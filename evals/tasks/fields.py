"""Fields an environment adds to its tasks: one typed model under one key of the task file,
declared in the environment's own module and registered by the environments' registry
(``evals.environments.registry``), so a new environment's tasks need no change to the task
model. A task file writes them at the task's top level, beside the question:

    {"id": "t1", "question": "What time is it?", "clock": {"zone": "UTC"}, "checks": [...]}

and the task holds them typed (``Task.fields_of(ClockFields)``). A key no environment has
registered is refused like any unknown field, with its file and line."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError


class TaskFields(BaseModel):
    """The fields one environment adds to a task, under the task file's key ``key``."""

    model_config = ConfigDict(extra="forbid")
    key: ClassVar[str]


F = TypeVar("F", bound=TaskFields)

# What a task field is held under inside the task; never a key of a task file.
HELD = "environment_fields"

_FIELDS: dict[str, type[TaskFields]] = {}


def add(model: type[F], taken: set[str], only_check: bool = False) -> type[F]:
    """``model`` held under its key (``evals.tasks.model.register_fields``, which knows the
    keys the task model has: ``taken``); ``only_check``: refuse what cannot be, hold nothing."""
    key = getattr(model, "key", None)
    if not isinstance(key, str) or not key or key == HELD:
        raise TypeError(f"{model.__name__}: task fields name their key in a 'key' class variable")
    if key in taken or _FIELDS.get(key, model) is not model:
        raise ValueError(f"task field {key!r} is taken")
    if not only_check:
        _FIELDS[key] = model
    return model


def split(data: Any) -> Any:
    """A task file's task with the registered keys moved under :data:`HELD` (what the task
    model validates); anything else as given."""
    if isinstance(data, dict) and HELD in data:
        raise ValueError(
            f"{HELD!r} is not a task field: write each environment's fields at the top"
        )
    if not isinstance(data, dict) or not (set(data) & set(_FIELDS)):
        return data
    held = {k: v for k, v in data.items() if k in _FIELDS}
    return {**{k: v for k, v in data.items() if k not in _FIELDS}, HELD: held}


def validated(held: dict[str, Any]) -> dict[str, TaskFields]:
    """Each held value read by its key's model (a model already read stays as it is)."""
    out: dict[str, TaskFields] = {}
    for key, value in held.items():
        model = _FIELDS.get(key)
        if model is None:
            raise ValueError(f"no environment declares the task field {key!r}")
        try:
            out[key] = value if isinstance(value, model) else model.model_validate(value)
        except ValidationError as exc:  # the field's own path, which pydantic drops here
            raise ValueError(
                "; ".join(
                    ".".join(str(p) for p in (key, *e["loc"])) + ": " + e["msg"]
                    for e in exc.errors()
                )
            ) from None
    return out
