"""The run record: one line of a run file, one task run, typed and versioned.

The runner writes it; rescoring, the comparison, the report, the sweep and the Inspect export
read it through :func:`read_runs`, which brings a record of any shape committed under
``results/`` to this one. A field a record was written without is None (``invalid_calls`` is
None in a record from before the harness checked arguments), so no reader asks whether a key
is there.

Versions (``record_version``):

1. every record before the field existed (no ``record_version``); some lack ``policy``,
   ``tool_grammar``, ``invalid_calls``, ``refused_calls``, ``call_shaped_text``, ``queue_ms``,
   ``api``, ``draft``, ``task_hash``...;
2. this model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evals import versioned

RECORD_VERSION = 2


class PolicyRecord(BaseModel):
    """The loop policy a run used: its name and every setting it ended up with."""

    model_config = ConfigDict(extra="forbid")

    name: str
    settings: dict[str, Any]


class RunRecord(BaseModel):
    """One task run: what ran, on what, what happened and the verdict."""

    model_config = ConfigDict(extra="forbid")

    record_version: int = RECORD_VERSION
    # What ran: the model and its server.
    label: str | None = None
    model: str
    model_sha256: str | None = None
    backend: str | None = None
    tool_grammar: str | None = None  # serve_local's --tool-grammar, when the server says
    draft: str | None = None  # serve_local's --draft, when the server says
    base_url: str | None = None
    servers: list[dict[str, Any]] | None = None
    api: str | None = None  # the wire shape: openai | anthropic
    server_software: str | None = None
    answered_by: list[str] | None = None
    # The loop: its limits, its policy and its sampling.
    loop: dict[str, Any] | None = None
    policy: PolicyRecord | None = None
    # How the task was solved: the agent loop, or a workflow, and what the workflow fixes.
    # Every record before solvers existed ran the agent loop.
    solver: str = "agent"
    solver_settings: dict[str, Any] = {}
    temperature: float | None = None
    seed: int | None = None
    # The task.
    task_set: str | None = None
    task_id: str
    question: str
    epoch: int = 1
    kind: str | None = None  # the family a generated task belongs to
    task_hash: str | None = None
    checks_hash: str | None = None
    # Where and from what code.
    machine: dict[str, Any] | None = None
    code_version: str | None = None
    run_id: str | None = None
    trace_path: str | None = None
    timestamp: str | None = None
    # What happened.
    status: str
    interruption: dict[str, Any] | None = None
    error: str | None = None
    stop_reason: str | None = None
    turns: int = 0
    tool_runs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_ms: float = 0.0
    queue_ms: float | None = None
    turn_latency_ms: list[float] = []
    turn_timings: list[dict[str, Any] | None] | None = None
    turn_finish_reasons: list[str] | None = None
    mean_turn_ms: float | None = None
    p95_turn_ms: float | None = None
    model_ms: float | None = None
    tool_ms: float | None = None
    tool_wall_ms: float | None = None
    harness_ms: float | None = None
    tool_bugs: list[str] | None = None
    invalid_calls: int | None = None  # None: written before arguments were checked
    refused_calls: int | None = None  # None: written before servers said so
    call_shaped_text: int | None = None  # None: written before it was counted
    tools_called: list[str] | None = None
    # The SQL tasks: where the data was (sqlite, or the PostgreSQL URL without password) and
    # one audit entry per run_sql call (turn, sql, ms, rows, cut, error, timed_out,
    # refused_write). None for tasks over files.
    database: str | None = None
    audit: list[dict[str, Any]] | None = None
    # The verdict.
    answer: str | None = None
    checks: list[dict[str, Any]] = []
    correct: bool = False
    rescored: dict[str, Any] | None = None  # the first verdict, when checks were applied again

    def line(self) -> dict[str, Any]:
        """The record as a run file's line holds it."""
        return self.model_dump(mode="json")


def parse(raw: dict[str, Any], where: str) -> RunRecord:
    """``raw`` as a record; what is no record is a :class:`RunFileError` naming ``where``.
    Version 1 wrote no version and left out what did not exist yet; nothing was renamed."""
    return versioned.parse(RunRecord, raw, where, "run record")


def read_runs(path: str | Path) -> list[RunRecord]:
    """The records of a run file, each brought to the current version."""
    from evals.run.records import read_records

    return [
        parse(raw, f"{path}, line {number}")
        for number, raw in enumerate(read_records(path), start=1)
    ]
