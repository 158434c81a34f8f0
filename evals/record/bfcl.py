"""The BFCL item record: one line of a BFCL run file, one item, typed and versioned.

What ran is the eval's :class:`~evals.record.spec.RunSpec`, the same model every task record
carries, and what BFCL's run fixes besides (its checker's version, the categories asked, the
sample) is :class:`BfclRun`; both are built once per run and shared by its items. The run
writes each item through :class:`ItemRecord`; the summaries, the comparison and ``--resume``
read it through :func:`read_items`, which brings a committed record of any shape to this one;
:func:`header` shows what ran and BFCL's run as one mapping, as a summary keys them.

Versions (``record_version``):

1. every record before the field existed (no ``record_version``); the oldest lack
   ``categories_asked`` and ``max_tokens``;
2. ``record_version`` written;
3. a multi-turn entry's ``turns`` (each step's calls and results, the backends' state after
   each turn), ``model_calls`` and ``force_quit`` (None for single-turn items); what ran at the
   top level, the loop's preset by name only;
4. what ran under ``spec`` (the preset with its settings, where the run kept them; a version
   3 record's preset has its name and no settings), BFCL's run under ``bfcl``;
5. this model: the spec's ``policy`` is ``preset``, its loop by the loop's own names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evals.record.files import read_records
from evals.record.spec import SPEC_FIELDS_BEFORE, RunSpec, renamed_spec
from evals.record.versioned import parse as parse_versioned

RECORD_VERSION = 5


class ItemCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str  # as the model called it
    function: str  # BFCL's name for it
    arguments: str


class BfclRun(BaseModel):
    """What a BFCL run fixes besides what ran: bfcl-eval's version, the checker's model entry,
    the categories asked, the sample (seed and limit) and the reply cap."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bfcl_eval: str | None = None
    checker_model: str | None = None
    categories_asked: list[str] | None = None
    seed: int | None = None
    limit: int | None = None
    max_tokens: int | None = None


class ItemRecord(BaseModel):
    """One BFCL item: what ran, what the model said, and what BFCL's checker made of it."""

    model_config = ConfigDict(extra="forbid")

    record_version: int = RECORD_VERSION
    spec: RunSpec
    bfcl: BfclRun
    # The item and the reply.
    id: str
    category: str
    question: str = ""
    calls: list[ItemCall] = []
    content: str | None = None
    finish_reason: str | None = None
    schema_problems: list[str | None] = []
    request_error: str | None = None
    # The verdict of BFCL's checker.
    checker_input: Any = None
    valid: bool = False
    error_type: str | None = None
    errors: list[Any] = []
    # Cost and time.
    latency_ms: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict[str, Any] | None = None
    retries: int | None = None
    answered_by: list[str] = []
    timestamp: str | None = None
    # Multi-turn entries: the conversation, turn by turn, and how it ended.
    turns: list[dict[str, Any]] | None = None
    model_calls: int | None = None
    force_quit: bool | None = None

    def line(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @property
    def header(self) -> dict[str, Any]:
        """What ran and BFCL's run, as one mapping (:func:`header`)."""
        return header(self.spec, self.bfcl)


_SPEC_FIELDS = tuple(k for k in SPEC_FIELDS_BEFORE if k != "policy")
_BFCL_FIELDS = tuple(BfclRun.model_fields)


def _nest(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 3 to 4: what ran under ``spec`` (the preset's name as a preset without its
    settings), BFCL's run under ``bfcl``."""
    data = dict(raw)
    spec = {k: data.pop(k) for k in _SPEC_FIELDS if k in data}
    name = data.pop("policy", None)
    spec["policy"] = None if name is None else {"name": name, "settings": {}}
    data["spec"] = spec
    data["bfcl"] = {k: data.pop(k) for k in _BFCL_FIELDS if k in data}
    return data


UPGRADES = {3: _nest, 4: renamed_spec}


def parse(raw: dict[str, Any], where: str) -> ItemRecord:
    """``raw`` as an item record; what is none is a :class:`RunFileError` naming ``where``."""
    return parse_versioned(ItemRecord, raw, where, "BFCL item record", UPGRADES)


def header(spec: RunSpec, run: BfclRun) -> dict[str, Any]:
    """What ran and BFCL's run as one mapping, the preset by its name: what a resumed run's
    records are compared with."""
    flat = {**spec.model_dump(mode="json"), **run.model_dump(mode="json")}
    flat["preset"] = spec.preset and spec.preset.name
    return flat


def read_items(path: str | Path) -> list[ItemRecord]:
    """The records of a BFCL run file, each checked and brought to the current version."""
    return [parse(raw, f"{path}, line {n}") for n, raw in enumerate(read_records(path), start=1)]
