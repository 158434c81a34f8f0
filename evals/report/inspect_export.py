"""Run files as Inspect AI logs (``.eval``), written through Inspect's own log API, so
``inspect view`` and every tool that reads Inspect logs opens our runs.

One log per run file; one sample per task run (task and epoch), holding the question, what the
checks ask (as the target), the whole transcript with its tool calls and results, the verdict
with each check, token usage, total and working time, and our per-turn timings and loop
settings as metadata. ``inspect-ai`` is an optional extra: imported here only, on use.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import EvalError
from evals.record import RunRecord, is_error, kept_file, read_runs, read_text
from evals.record import run_files as find_run_files
from evals.report.stats import accuracy
from harness.state import RunState, ToolRun

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage, ChatMessageAssistant, StopReason
    from inspect_ai.tool import ToolCallError

INSTALL = 'pip install -e ".[inspect]"  (or: pip install inspect-ai)'

# Our finish reasons, in both wire shapes, as Inspect names them.
STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


class ExportError(EvalError):
    """A run file that cannot be exported, or Inspect AI missing."""


def _require_inspect() -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        raise ExportError(
            f"exporting to Inspect AI logs needs the inspect-ai package: {INSTALL}"
        ) from exc


def export(run_files: list[Path], out: Path) -> list[Path]:
    """One ``.eval`` log in ``out`` per run file (folders are searched for run files)."""
    _require_inspect()
    files = find_run_files(run_files)
    if not files:
        raise ExportError("no run files (*.jsonl) among " + ", ".join(map(str, run_files)))
    out.mkdir(parents=True, exist_ok=True)
    return [export_run(f, out / f"{f.stem}.eval") for f in files]


def export_run(run_file: Path, log_path: Path) -> Path:
    from inspect_ai.log import write_eval_log

    from evals.bfcl.inspect_log import eval_log as bfcl_log
    from evals.bfcl.inspect_log import is_bfcl_run

    if is_bfcl_run(run_file):  # BFCL's items and conversations, as its checker judged them
        write_eval_log(bfcl_log(run_file), log_path, format="eval")
        return log_path
    records = read_runs(run_file)
    if not records:
        raise ExportError(f"{run_file}: no records")
    write_eval_log(eval_log(run_file, records), log_path, format="eval")
    return log_path


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
    settings = {"loop": ran["loop"], "policy": ran["policy"], "api": ran["api"]}
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
    found["policy"] = line["policy"]
    found["loop"] = line["loop"]
    if state is None:
        found["state_file"] = None
    return found


def messages_of(state: RunState, model: str) -> list[ChatMessage]:
    """The run's chat messages as Inspect's, each tool result marked with its call's error
    (refused arguments, a declined approval, a failed tool) when it had one."""
    from inspect_ai.model import (
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    log = {(r.turn, r.call_id): r for r in state.tool_log}
    found: list[ChatMessage] = []
    turn = 0
    for message in state.messages:
        role = message["role"]
        text = _text(message.get("content"))
        if role == "system":
            found.append(ChatMessageSystem(content=text))
        elif role == "user":
            found.append(ChatMessageUser(content=text))
        elif role == "assistant":
            turn += 1
            found.append(_assistant(message, text, model))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            run = log.get((turn, call_id))
            found.append(
                ChatMessageTool(
                    content=text,
                    tool_call_id=call_id,
                    function=message.get("name") or (run.name if run else None),
                    error=_tool_error(run, state) if run and not run.ok else None,
                )
            )
    return found


def _assistant(message: dict[str, Any], text: str, model: str) -> ChatMessageAssistant:
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.tool import ToolCall

    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
            parse_error = None if isinstance(arguments, dict) else "arguments are not an object"
        except json.JSONDecodeError as exc:
            arguments, parse_error = None, f"arguments are not JSON: {exc.msg}: {raw}"
        except RecursionError:
            arguments, parse_error = None, f"arguments nest too deeply to read: {raw[:200]}"
        calls.append(
            ToolCall(
                id=str(call.get("id", "")),
                function=str(function.get("name", "")),
                arguments=arguments if isinstance(arguments, dict) else {},
                parse_error=parse_error,
            )
        )
    return ChatMessageAssistant(content=text, tool_calls=calls or None, model=model)


def _tool_error(run: ToolRun, state: RunState) -> ToolCallError:
    from inspect_ai.tool import ToolCallError

    key = f"{run.turn}.{run.index}"
    if key in state.rejected:
        return ToolCallError("approval", f"rejected: {state.rejected[key] or 'no reason given'}")
    if run.invalid:
        return ToolCallError("parsing", run.error or "arguments failed the tool's schema")
    return ToolCallError("unknown", run.error or "the call failed")


def _text(content: Any) -> str:
    """A message's text; content given as parts (the Messages shape) is joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
