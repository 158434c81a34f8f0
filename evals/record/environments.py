"""What a record keeps of the environment its task ran on: one small model per environment,
named by ``name``, the record's ``environment`` field one of them, chosen by that name among
the models registered (:func:`register`). An environment fills its own and nothing else, and
declares its model in its own package (its ``data``: ``evals.workspace.data``,
``evals.database.data``, ``evals.mcp.data``, ``evals.tau2.data``, or a plugin's); the
environments' registry registers each as it enters, and whoever reads a record loads the
registry first, so a record reads typed wherever it is read. A record of an environment with
no model registered reads as :class:`OtherData`, its name and what it kept as given."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainValidator,
    SerializationInfo,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from evals import installed


class Data(BaseModel):
    """What every environment's record data answers; each model names itself by a ``name``
    field whose default is the environment's name."""

    name: str
    # The distribution that installed the environment, where a plugin did: what a reader of
    # the record needs installed. Written only where set, so records of our own environments
    # read and write as they always have.
    package: str | None = None

    def verdicts(self) -> dict[str, float]:
        """What the environment's own judge gave the run, by judge, as the record keeps it
        (read again by a rescore; ``evals.tasks.Judged``): none unless the environment says."""
        return {}

    @model_serializer(mode="wrap")
    def _package_where_set(
        self, handler: SerializerFunctionWrapHandler, _: SerializationInfo
    ) -> Any:
        written = handler(self)
        if isinstance(written, dict) and written.get("package") is None:
            written.pop("package", None)
        return written

    def offered_tools(self) -> set[str]:
        """Tools offered to the run beyond this project's own (a server's), by name: what a
        call written as text may name besides ours."""
        return set()


class OtherData(Data):
    """An environment this module has no model for: its name, and what it kept as fields."""

    model_config = ConfigDict(extra="allow")

    name: str


# The models by the name of their environment: this project's, and those registered.
_MODELS: dict[str, type[Data]] = {}


def register(model: type[Data], only_check: bool = False) -> type[Data]:
    """``model`` read for records that name its environment (its ``name`` field's default);
    registering a second model under one name is an error (``only_check``: say so, register
    nothing)."""
    name = model.model_fields["name"].default
    if not isinstance(name, str) or not name:
        raise TypeError(f"{model.__name__}: record data names its environment in a 'name' default")
    if _MODELS.get(name, model) is not model:
        raise ValueError(f"two record data models for the environment {name!r}")
    if not only_check:
        _MODELS[name] = model
    return model


# The preset settings only an environment's tasks read (the SQL tools' row cap and statement
# timeout: the database's), by the environment's name: a record keeps those of its own
# environment and no other's (``preset_used``).
_OWNED: dict[str, frozenset[str]] = {}


def own_settings(environment: str, settings: tuple[str, ...], only_check: bool = False) -> None:
    """``settings`` read by ``environment``'s tasks alone; a setting another environment owns
    is an error (``only_check``: say so, register nothing)."""
    taken = {s: e for e, owned in _OWNED.items() if e != environment for s in owned}
    clash = [f"{s!r} ({taken[s]}'s)" for s in settings if s in taken]
    if clash:
        raise ValueError(f"environment {environment!r}: the settings {', '.join(clash)} are owned")
    if not only_check:
        _OWNED[environment] = frozenset(settings)


def preset_used(settings: dict[str, Any], environments: set[str]) -> dict[str, Any]:
    """A preset's ``settings`` less those owned by an environment not in ``environments``
    (the registry loaded first: what each environment owns is declared there)."""
    installed.load()
    other = {s for e, owned in _OWNED.items() if e not in environments for s in owned}
    return {k: v for k, v in settings.items() if k not in other}


def _read(value: Any) -> Data:
    if isinstance(value, Data):
        return value
    name = value.get("name") if isinstance(value, dict) else None
    if name not in _MODELS:  # whoever reads a record, the environments' data are known
        installed.load()
    return _MODELS.get(name, OtherData).model_validate(value)  # type: ignore[arg-type]


# A record's ``environment``: the model its name is registered under, written with its own
# fields.
EnvironmentData = Annotated[SerializeAsAny[Data], PlainValidator(_read)]
