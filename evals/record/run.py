"""The run record: one line of a run file, one task run, typed and versioned.

The runner builds it in one place (``evals.run.recorder``); rescoring, the comparison, the
report, the sweep and the Inspect export read it through :func:`read_runs`, which brings a
record of any shape written before to this one. A field a record was written
without is None (``invalid_calls`` is None in a record from before the harness checked
arguments), so no reader asks whether a key is there.

Versions (``record_version``):

1. every record before the field existed (no ``record_version``); some lack the preset,
   ``tool_grammar``, ``invalid_calls``, ``refused_calls``, ``call_shaped_text``, ``queue_ms``,
   ``api``, ``draft``, ``task_hash``...;
2. ``record_version`` written; what ran, and the SQL tasks' ``database`` and ``audit``, at the
   top level beside the task's own fields;
3. what ran is the eval's :class:`~evals.record.spec.RunSpec` under ``spec``, and what only
   one environment keeps is under ``environment``, which names it. A version 2 record with a
   ``database`` or an ``audit`` ran on the database, any other on the workspace;
4. the spec's preset under that name (it was ``policy``), its loop's ``budget_usd`` and
   ``task_timeout_s`` are ``max_budget_usd`` and ``timeout_s`` (the loop's own names);
5. this model: the settings in layers (``loop``, ``conversation`` where a task has a user,
   the preset without the settings another environment owns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evals import installed
from evals.record.environments import EnvironmentData, preset_used
from evals.record.files import read_records
from evals.record.spec import CONVERSATION_KEYS_V4, SPEC_FIELDS_BEFORE, RunSpec, renamed_spec
from evals.record.versioned import parse as parse_versioned

RECORD_VERSION = 5

NOT_RUN = "not_run"
ERROR = "error"


class UserRecord(BaseModel):
    """Who played the user of a conversation: a model (its name and server, its sampling) or
    a script."""

    model_config = ConfigDict(extra="forbid")

    scripted: bool = False
    model: str | None = None
    base_url: str | None = None
    temperature: float | None = None
    seed: int | None = None


class UserTurn(BaseModel):
    """One message of a simulated user, how many tool calls the agent had made before it, and
    the agent's words it replied to (None: it opened the talk): what the user's error rules
    read (``lab.report.users``)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    calls_before: int = 0
    replying_to: str | None = None


class ConversationRecord(BaseModel):
    """A task run held as a conversation with a simulated user (``evals.conversation``): why
    it ended (``evals.conversation.End``: ``user_stop``, ``transfer``, ``out_of_scope``,
    ``agent_stop``, ``capped``, ``step_cap``, ``too_many_errors``, ``agent_error``,
    ``user_error``, ``error``), how many messages the user wrote, who the user was, and the
    steps and failed calls of both sides as τ² counts them (None: a record made before)."""

    model_config = ConfigDict(extra="forbid")

    end: str
    user_turns: int = 0
    user: UserRecord = UserRecord()
    said: list[UserTurn] = []
    # What the user model's side cost (None: a scripted user): requests, prompt and
    # completion tokens, ms, and the prompt tokens its server computed (``prompt_n``).
    user_spent: dict[str, float] | None = None
    steps: int | None = None
    errors: int | None = None


class RunRecord(BaseModel):
    """One task run: what ran (``spec``), on what (``environment``), what happened and the
    verdict."""

    model_config = ConfigDict(extra="forbid")

    record_version: int = RECORD_VERSION
    spec: RunSpec
    environment: EnvironmentData
    # The task.
    task_id: str
    question: str
    epoch: int = 1
    kind: str | None = None  # the family a generated task belongs to
    task_hash: str | None = None
    checks_hash: str | None = None
    seed: int | None = None  # the epoch's seed, when the eval sampled
    # Where it ran.
    run_id: str | None = None
    trace_path: str | None = None
    timestamp: str | None = None
    answered_by: list[str] | None = None
    server_software: str | None = None
    # What happened.
    status: str
    interruption: dict[str, Any] | None = None
    error: str | None = None
    stop_reason: str | None = None
    turns: int = 0
    tool_runs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # What the run cost at list price; None: unknown (a hosted model the price table does not
    # know: spec.prices), never a 0 that would read as free.
    cost_usd: float | None = 0.0
    # Requests the provider answered 429 or 5xx before a reply came, retried (None: written
    # before they were counted), and the seconds waited between (Retry-After, backoff).
    retries: int | None = None
    retry_wait_s: float | None = None
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
    # The verdict.
    answer: str | None = None
    checks: list[dict[str, Any]] = []
    correct: bool = False
    # What the answer states about the workspace that the files contradict (sizes, ranks,
    # counts, files it does not hold), whatever the verdict: evals.scoring.claims. None: not
    # checked (no known workspace, or written before).
    false_claims: list[str] | None = None
    rescored: dict[str, Any] | None = None  # the first verdict, when checks were applied again
    # A conversation with a simulated user (None: one question, one answer).
    conversation: ConversationRecord | None = None

    def line(self) -> dict[str, Any]:
        """The record as a run file's line holds it."""
        return self.model_dump(mode="json")


def is_error(record: RunRecord) -> bool:
    """A task run that says nothing about the model: one the machinery ended (the provider
    unreachable, or 429/5xx after its retries, ``error``) or that never ran (``not_run``: the
    server was gone, the eval stopped first). It is left out of every accuracy, interval and
    paired test, counted apart, and run again by ``--resume``. What the model did (the turn
    cap reached, refused calls, an empty answer) stays a wrong answer."""
    return record.status in (ERROR, NOT_RUN)


_DATABASE_FIELDS = ("database", "audit")


def _nest(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 2 to 3: what ran under ``spec``, the database's fields under ``environment``."""
    data = dict(raw)
    spec = {k: data.pop(k) for k in SPEC_FIELDS_BEFORE if k in data}
    kept = {k: data.pop(k, None) for k in _DATABASE_FIELDS}
    on_database = any(v is not None for v in kept.values())
    data["spec"] = spec
    data["environment"] = {"name": "database", **kept} if on_database else {"name": "workspace"}
    return data


def _layered(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 4 to 5: the settings in layers. The conversation's settings leave ``loop`` for
    ``conversation`` in a conversation's record and are dropped from any other; the preset
    keeps no setting owned by an environment the record did not run on."""
    spec = dict(raw["spec"])
    loop = dict(spec.get("loop") or {})
    talk = {k: loop.pop(k) for k in CONVERSATION_KEYS_V4 if k in loop}
    if spec.get("loop") is not None:
        spec["loop"] = loop
    spec["conversation"] = talk if raw.get("conversation") is not None and talk else None
    preset = spec.get("preset")
    if isinstance(preset, dict) and isinstance(preset.get("settings"), dict):
        name = str((raw.get("environment") or {}).get("name"))
        spec["preset"] = {**preset, "settings": preset_used(preset["settings"], {name})}
    return {**raw, "spec": spec}


UPGRADES = {2: _nest, 3: renamed_spec, 4: _layered}


def parse(raw: dict[str, Any], where: str) -> RunRecord:
    """``raw`` as a record; what is no record is a :class:`RunFileError` naming ``where``.
    Version 1 wrote no version and left out what did not exist yet; nothing was renamed."""
    return parse_versioned(RunRecord, raw, where, "run record", UPGRADES)


def read_runs(path: str | Path) -> list[RunRecord]:
    """The records of a run file, each brought to the current version."""
    installed.load()  # every environment's record data, whatever was imported before
    return [
        parse(raw, f"{path}, line {number}")
        for number, raw in enumerate(read_records(path), start=1)
    ]
