"""The BFCL item record: one line of ``results/bfcl/*.jsonl``, one item, typed and versioned.

The run writes it through :class:`ItemRecord`; the summaries, the comparison and ``--resume``
read it through :func:`read_items`, which brings a committed record of any shape to this one
(the readers keep indexing it by key: every key is there, a missing one as None).

Versions (``record_version``):

1. every record before the field existed (no ``record_version``); the oldest lack
   ``categories_asked`` and ``max_tokens``;
2. ``record_version`` written;
3. this model: a multi-turn entry's ``turns`` (each step's calls and results, the backends'
   state after each turn), ``model_calls`` and ``force_quit`` (None for single-turn items).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evals.record.files import read_records
from evals.record.versioned import parse as parse_versioned

RECORD_VERSION = 3


class ItemCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str  # as the model called it
    function: str  # BFCL's name for it
    arguments: str


class ItemRecord(BaseModel):
    """One BFCL item: what ran, what the model said, and what BFCL's checker made of it."""

    model_config = ConfigDict(extra="forbid")

    record_version: int = RECORD_VERSION
    # What ran.
    label: str | None = None
    model: str
    model_sha256: str | None = None
    backend: str | None = None
    tool_grammar: str | None = None
    draft: str | None = None
    base_url: str | None = None
    servers: list[dict[str, Any]] | None = None
    bfcl_eval: str | None = None
    checker_model: str | None = None
    categories_asked: list[str] | None = None
    seed: int | None = None
    limit: int | None = None
    max_tokens: int | None = None
    machine: dict[str, Any] | None = None
    code_version: str | None = None
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
    policy: str | None = None  # the loop policy the conversation ran under

    def line(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def parse(raw: dict[str, Any], where: str) -> ItemRecord:
    """``raw`` as an item record (version 1 only lacked fields); what is none is a
    :class:`RunFileError` naming ``where``."""
    return parse_versioned(ItemRecord, raw, where, "BFCL item record")


def read_items(path: str | Path) -> list[dict[str, Any]]:
    """The records of a BFCL run file, each checked and brought to the current version."""
    return [
        parse(raw, f"{path}, line {n}").line() for n, raw in enumerate(read_records(path), start=1)
    ]
