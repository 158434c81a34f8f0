"""The one place a task run's record is built: from the eval's :class:`RunSpec`, the task, what
its environment keeps of it, the run's state and the checks' verdicts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evals.numbers import mean, p95
from evals.record import (
    ERROR,
    NOT_RUN,
    ConversationRecord,
    EnvironmentData,
    RunRecord,
    RunSpec,
)
from evals.scoring.evidence import offerable_tools
from evals.scoring.verdict import Verdict, right
from evals.tasks import Task
from harness.state import RunState
from serve_local.public import call_spans


def call_shaped_text(state: RunState, offered: set[str] | None = None) -> int:
    """Calls of a tool a run can be offered (submit included, and ``offered``: the tools an MCP
    server gave this run) left in the assistant's text, never run as calls: what a server
    refused (a schema echo, arguments its schema rejects) or never parsed."""
    names = offerable_tools() | (offered or set())
    return sum(
        len(call_spans(m["content"], names))
        for m in state.messages
        if m["role"] == "assistant" and isinstance(m.get("content"), str)
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _task_fields(task: Task, epoch: int, seed: int | None) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "question": task.question,
        "epoch": epoch,
        "kind": task.kind,  # the family a generated task belongs to
        "task_hash": task.task_hash,  # what was asked, so runs pair only over one task
        "checks_hash": task.checks_hash,
        "seed": seed,
    }


def task_record(
    *,
    spec: RunSpec,
    environment: EnvironmentData,
    task: Task,
    epoch: int,
    seed: int | None,
    state: RunState,
    verdict: Verdict,
    trace_path: str | None,
    answered_by: list[str],
    server_software: str,
    queue_ms: float = 0.0,
    conversation: ConversationRecord | None = None,
    machinery: str | None = None,
) -> RunRecord:
    """``queue_ms``: time the run's turns waited for a server with room (an eval's queue); it
    is recorded apart and left out of wall time, which counts the task's own work.
    ``machinery``: why the machinery around the loop failed the run (a conversation's user, an
    environment's judge): an error, whatever the checks say."""
    latencies = [t.latency_ms for t in state.turn_records]
    status = (
        ERROR
        if machinery is not None
        or state.provider_unavailable
        or state.tool_server_failed
        or state.wall_limit_hit
        or state.prompt_too_long
        else state.status
    )
    return RunRecord(
        spec=spec,
        environment=environment,
        **_task_fields(task, epoch, seed),
        run_id=state.run_id,
        trace_path=trace_path,
        timestamp=_now(),
        answered_by=answered_by,
        server_software=server_software,
        status=status,
        interruption=state.interruption,
        error=machinery or state.error,
        stop_reason=state.stop_reason,
        turns=state.turns,
        tool_runs=state.tool_runs,
        prompt_tokens=state.prompt_tokens,
        completion_tokens=state.completion_tokens,
        cost_usd=None
        if (spec.prices or {}).get("source") == "unknown"
        else round(state.cost_usd, 8),
        retries=sum(t.retries for t in state.turn_records),
        retry_wait_s=round(sum(t.retry_wait_s for t in state.turn_records), 3),
        wall_ms=round(state.wall_ms - queue_ms, 1),
        queue_ms=round(queue_ms, 1),
        false_claims=verdict.false_claims,
        turn_latency_ms=latencies,
        turn_timings=[t.timings for t in state.turn_records],
        turn_finish_reasons=[t.finish_reason for t in state.turn_records],
        mean_turn_ms=mean(latencies),
        p95_turn_ms=p95(latencies),
        model_ms=round(state.model_ms, 1),
        tool_ms=round(state.tool_ms, 1),
        tool_wall_ms=round(state.tool_wall_ms, 1),
        harness_ms=round(state.harness_ms - queue_ms, 1),
        tool_bugs=[f"{r.name}: {r.error}" for r in state.tool_log if r.bug],
        # Calls whose arguments failed the tool's JSON Schema (the harness checks them again).
        invalid_calls=sum(r.invalid for r in state.tool_log),
        # Calls the server refused to make (arguments its schema rejects, a schema echoed...).
        refused_calls=sum(len(t.refused_calls or []) for t in state.turn_records),
        tools_called=[r.name for r in state.tool_log],
        call_shaped_text=call_shaped_text(state, environment.offered_tools()),
        answer=state.answer,
        checks=verdict.checks,
        correct=right(verdict.checks, status),
        conversation=conversation,
    )


def unpriced(spec: RunSpec) -> bool:
    """Whether the runs of ``spec`` have no price: a hosted model the price table lacks."""
    return (spec.prices or {}).get("source") == "unknown"


def not_run_record(
    *,
    spec: RunSpec,
    environment: EnvironmentData,
    task: Task,
    epoch: int,
    seed: int | None,
    reason: str,
) -> RunRecord:
    """A task run the eval did not start (the server was gone): an error, never an answer."""
    return RunRecord(
        spec=spec,
        environment=environment,
        **_task_fields(task, epoch, seed),
        timestamp=_now(),
        status=NOT_RUN,
        error=reason,
        queue_ms=0.0,
    )
