"""A labelled corpus read row by row (JSON Lines, one pydantic model per row): the answer
corpora of ``grader_check`` and the evidence corpus of ``evidence_check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from evals.errors import EvalError

Row = TypeVar("Row", bound=BaseModel)


def read_labelled(path: Path, model: type[Row], error: type[EvalError]) -> list[Row]:
    """Every row of ``path`` as ``model``; a file that cannot be read or a line that is no such
    row raises ``error``, naming the file and the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise error(f"{path}: cannot read the corpus ({exc.strerror})") from exc
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(model.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise error(f"{path}, line {number}: {exc}") from exc
    return rows
