"""Versioned records: one line of a results file read as a typed model, whatever version of
the model wrote it. The run record (``evals.record.run``) and the BFCL item record
(``evals.record.bfcl``) both read through :func:`parse`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evals.errors import RunFileError

Model = TypeVar("Model", bound=BaseModel)
# An upgrade takes a record of version N to version N + 1.
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]


def migrate(
    raw: dict[str, Any], current: int, upgrades: Mapping[int, Upgrade] | None = None
) -> dict[str, Any]:
    """``raw`` brought to version ``current``: a record without ``record_version`` is version
    1; each version without an upgrade only lacked fields, which the model defaults."""
    version = raw.get("record_version", 1)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"record_version {version!r} is not a version")
    if version > current:
        raise ValueError(f"record_version {version} is newer than this code reads ({current})")
    data = dict(raw)
    for step in range(version, current):
        data = (upgrades or {}).get(step, dict)(data)
    data["record_version"] = current
    return data


def parse(
    model: type[Model],
    raw: dict[str, Any],
    where: str,
    what: str,
    upgrades: Mapping[int, Upgrade] | None = None,
) -> Model:
    """``raw`` as ``model`` at its ``record_version`` default; what is not one is a
    :class:`RunFileError` naming ``where`` and what it is not (``what``)."""
    current = model.model_fields["record_version"].default
    try:
        return model.model_validate(migrate(raw, current, upgrades))
    except (ValidationError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        why = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(exc)
        raise RunFileError(f"{where}: not a {what} ({why})") from exc
