"""A BFCL run file as an Inspect AI log: one sample per item or conversation, scored as BFCL's
checker judged it. A multi-turn conversation carries its whole transcript (read from the state
kept beside the run file); a single-turn item its question and the calls it got back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evals.record.bfcl import ItemRecord, read_items
from evals.report.inspect_log.common import messages_of
from evals.stats import wilson
from harness.state import RunState

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample


def is_bfcl_run(run_file: Path) -> bool:
    """Whether ``run_file`` holds BFCL item records (a category, no task id)."""
    with open(run_file, encoding="utf-8") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        raw = json.loads(first) if first else {}
    except json.JSONDecodeError:
        return False
    return isinstance(raw, dict) and "category" in raw and "task_id" not in raw


def _state(run_file: Path, item_id: str) -> RunState | None:
    path = run_file.with_suffix(".runs") / f"{item_id}.json"
    return RunState.from_dict(json.loads(path.read_text())) if path.exists() else None


def _sample(run_file: Path, record: ItemRecord) -> EvalSample:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    model = str(record.spec.model)
    state = _state(run_file, record.id)
    messages = messages_of(state, model) if state else []
    finished = datetime.fromisoformat(record.timestamp) if record.timestamp else None
    calls = [f"{c.function}({c.arguments})" for c in record.calls]
    tokens = record.prompt_tokens + record.completion_tokens
    return EvalSample(
        id=record.id,
        epoch=1,
        input=record.question or record.id,
        target="",
        messages=messages,
        output=ModelOutput(model=model, choices=[]),
        error=EvalError(message=record.request_error, traceback="", traceback_ansi="")
        if record.request_error
        else None,
        scores={
            "bfcl": Score(
                value="C" if record.valid else "I",
                answer="; ".join(calls) or record.content,
                explanation=record.error_type or "valid",
                metadata={"errors": record.errors, "category": record.category},
            )
        },
        model_usage={
            model: ModelUsage(
                input_tokens=record.prompt_tokens,
                output_tokens=record.completion_tokens,
                total_tokens=tokens,
            )
        },
        completed_at=finished.isoformat() if finished else None,
        metadata={
            "category": record.category,
            "turns": record.turns,
            "model_calls": record.model_calls,
            "force_quit": record.force_quit,
            "preset": record.header["preset"],
        },
    )


def eval_log(run_file: Path) -> EvalLog:
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
    )

    records = read_items(run_file)
    first = records[0].header
    answered = [r for r in records if r.request_error is None]
    rate = wilson(sum(r.valid for r in answered), len(answered))
    stamps = [r.timestamp for r in records if r.timestamp]
    created = min(stamps) if stamps else datetime.now(UTC).isoformat(timespec="seconds")
    solver = "harness.loop" if records[0].turns is not None else "one request"
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=created,
            task="bfcl:" + ",".join(dict.fromkeys(r.category for r in records)),
            task_display_name=str(first["label"] or run_file.stem),
            dataset=EvalDataset(
                name="bfcl",
                samples=len(records),
                sample_ids=[r.id for r in records],
            ),
            model=str(first["model"]),
            model_base_url=first["base_url"],
            config=EvalConfig(epochs=1),
            solver=solver,
            packages={"bfcl-eval": str(first["bfcl_eval"])},
            metadata={
                "run_file": run_file.name,
                "model_sha256": first["model_sha256"],
                "tool_grammar": first["tool_grammar"],
                "preset": first.get("preset"),
                "checker_model": first["checker_model"],
            },
        ),
        plan=EvalPlan(name="bfcl", steps=[EvalPlanStep(solver=solver)]),
        results=EvalResults(
            total_samples=len(records),
            completed_samples=len(answered),
            scores=[
                EvalScore(
                    name="bfcl",
                    scorer="bfcl",
                    metrics={"accuracy": EvalMetric(name="accuracy", value=rate.rate)},
                    metadata={"correct": rate.k, "answered": rate.n},
                )
            ],
        ),
        samples=[_sample(run_file, r) for r in records],
    )
