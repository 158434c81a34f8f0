"""A run file of task runs as an Inspect log: one sample per task run (task and epoch),
holding the question, what the checks ask (as the target), the whole transcript with its tool
calls and results, the verdict with each check, token usage, total and working time, and our
per-turn timings and loop settings as metadata."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.record import RunRecord, is_error, kept_file, read_text
from evals.report.inspect_log.common import STOP_REASONS, ExportError, messages_of
from evals.stats import accuracy
from harness.state import RunState

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample


def eval_log(run_file: Path, records: list[RunRecord]) -> EvalLog:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage

    first = records[0]
    model = str(first.spec.model or "unknown")
    samples = [_sample(run_file, r) for r in records]
    correct = sum(bool(r.correct) for r in records)
    times = [_finished(r) for r in records]
    started = min(_finished(r) - timedelta(milliseconds=_total_ms(r)) for r in records)
    prompt = sum(r.prompt_tokens for r in records)
    completion = sum(r.completion_tokens for r in records)
    ran = first.spec.model_dump(mode="json")
    settings = {"loop": ran["loop"], "preset": ran["preset"], "api": ran["api"]}
    spec = EvalSpec(
        created=started.isoformat(),
        task=str(first.spec.task_set or "tasks"),
        task_display_name=str(first.spec.label or run_file.stem),
        dataset=EvalDataset(
            name=first.spec.task_set,
            samples=len({r.task_id for r in records}),
            sample_ids=list(dict.fromkeys(r.task_id for r in records)),
        ),
        model=model,
        model_base_url=first.spec.base_url,
        config=EvalConfig(
            epochs=max(r.epoch for r in records),
            message_limit=None,
        ),
        solver="harness.loop",
        solver_args=settings,
        packages={"loopbench": str(first.spec.code_version or "unknown")},
        metadata={
            "run_file": run_file.name,
            "label": first.spec.label,
            "model_sha256": first.spec.model_sha256,
            "backend": first.spec.backend,
            "tool_grammar": first.spec.tool_grammar,
            "servers": first.spec.servers,
            "task_set": first.spec.task_set,
            "machine": first.spec.machine,
            **settings,
        },
    )
    over_tasks = accuracy(records)
    return EvalLog(
        status="success",
        eval=spec,
        plan=EvalPlan(
            name="loopbench",
            steps=[EvalPlanStep(solver="harness.loop", params=settings)],
        ),
        results=EvalResults(
            total_samples=len(records),
            completed_samples=sum(not is_error(r) for r in records),
            scores=[
                EvalScore(
                    name="checks",
                    scorer="checks",
                    metrics={"accuracy": EvalMetric(name="accuracy", value=over_tasks.rate)},
                    metadata={"correct": correct, "interval": over_tasks},
                )
            ],
        ),
        stats=EvalStats(
            started_at=started.isoformat(),
            completed_at=max(times).isoformat(),
            model_usage={
                model: ModelUsage(
                    input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
                )
            },
        ),
        samples=samples,
    )


def _finished(record: RunRecord) -> datetime:
    if record.timestamp is None:
        raise ExportError(f"the record of {record.task_id} epoch {record.epoch} has no timestamp")
    return datetime.fromisoformat(record.timestamp)


def _total_ms(record: RunRecord) -> float:
    return float(record.wall_ms or 0.0) + float(record.queue_ms or 0.0)


def _state(run_file: Path, record: RunRecord) -> RunState | None:
    if not record.run_id:
        return None
    path = kept_file(run_file, f"{record.run_id}.json")
    return RunState.from_dict(json.loads(read_text(path))) if path else None


def target(checks: list[dict[str, Any]]) -> list[str]:
    """What the checks ask, one line each (``contains "errors.log"``, ``observed read_file
    {"path": "notes.txt"} holding "rotate"``)."""
    return [str(c["check"]) for c in checks]


def explanation(checks: list[dict[str, Any]]) -> str:
    failed = [c["check"] for c in checks if not c["passed"]]
    lines = [f"{'passed' if c['passed'] else 'FAILED'}: {c['check']}" for c in checks]
    head = "every check passed" if not failed else f"{len(failed)} of {len(checks)} checks failed"
    return "\n".join([head, *lines]) if checks else "no checks (the task did not run)"


def _sample(run_file: Path, record: RunRecord) -> EvalSample:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    state = _state(run_file, record)
    model = str(record.spec.model or "unknown")
    messages = messages_of(state, model) if state else []
    replies = [m for m in messages if isinstance(m, ChatMessageAssistant)]
    finished = _finished(record)
    total_ms = _total_ms(record)
    reason = STOP_REASONS.get(str(record.stop_reason), "unknown")
    output = ModelOutput(
        model=model,
        choices=[ChatCompletionChoice(message=replies[-1], stop_reason=reason)] if replies else [],
    )
    prompt, completion = record.prompt_tokens, record.completion_tokens
    checks = record.checks or []
    error = (
        EvalError(message=str(record.error or record.status), traceback="", traceback_ansi="")
        if is_error(record)
        else None
    )
    return EvalSample(
        id=record.task_id,
        error=error,
        epoch=record.epoch,
        input=record.question,
        target=target(checks),
        messages=messages,
        output=output,
        scores={
            "checks": Score(
                value="C" if record.correct else "I",
                answer=record.answer,
                explanation=explanation(checks),
                metadata={"checks": checks},
            )
        },
        model_usage={
            model: ModelUsage(
                input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
            )
        },
        started_at=(finished - timedelta(milliseconds=total_ms)).isoformat(),
        completed_at=finished.isoformat(),
        total_time=round(total_ms / 1000, 3),
        working_time=round(float(record.wall_ms or 0.0) / 1000, 3),
        turn_count=record.turns,
        metadata=_sample_metadata(record, state),
    )


def _sample_metadata(record: RunRecord, state: RunState | None) -> dict[str, Any]:
    keys = (
        "run_id",
        "status",
        "interruption",
        "error",
        "turns",
        "tool_runs",
        "cost_usd",
        "wall_ms",
        "queue_ms",
        "model_ms",
        "tool_ms",
        "tool_wall_ms",
        "harness_ms",
        "turn_latency_ms",
        "turn_timings",
        "turn_finish_reasons",
        "stop_reason",
        "invalid_calls",
        "refused_calls",
        "call_shaped_text",
        "seed",
        "temperature",
    )
    line = record.line()
    line.update(line.pop("spec"))  # what ran and what happened side by side, as Inspect shows
    found = {k: line[k] for k in keys}
    found["preset"] = line["preset"]
    found["loop"] = line["loop"]
    if state is None:
        found["state_file"] = None
    return found
