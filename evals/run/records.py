"""One record per task run, and summaries of a run file (JSON and Markdown)."""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.errors import RunFileError
from evals.report.analyst import figures as analyst_figures
from evals.report.analyst import markdown as analyst_markdown
from evals.report.markdown import table
from evals.report.stats import accuracy, accuracy_of, pass_hat_curve
from evals.run.record import RunRecord
from evals.run.status import ERROR, NOT_RUN, is_error
from evals.scoring.checks import offerable_tools
from harness.state import RunState
from serve_local.callshape import call_spans

# Run records are committed with each task's state file and trace; a file above this size is
# kept gzipped, so a runaway transcript does not bloat the repository.
COMPRESS_ABOVE = 64 * 1024


CODE_PATHS = ("serve_local", "harness", "evals", "pyproject.toml", "Makefile")


def code_version() -> str | None:
    """The git commit the code ran from, ``+dirty`` when the code differed from it."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", *CODE_PATHS],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+dirty" if commit and dirty else commit or None


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "platform": platform.platform()}


def p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def call_shaped_text(state: RunState) -> int:
    """Calls of a tool a run can be offered (submit included) left in the assistant's text,
    never run as calls: what a server refused (a schema echo, arguments its schema rejects) or
    never parsed."""
    names = offerable_tools()
    return sum(
        len(call_spans(m["content"], names))
        for m in state.messages
        if m["role"] == "assistant" and isinstance(m.get("content"), str)
    )


def task_record(
    *,
    context: dict[str, Any],
    task_id: str,
    question: str,
    epoch: int,
    state: RunState,
    checks: list[dict[str, Any]],
    trace_path: str | None,
    queue_ms: float = 0.0,
) -> RunRecord:
    """``queue_ms``: time the run's turns waited for a server with room (an eval's queue); it
    is recorded apart and left out of wall time, which counts the task's own work."""
    latencies = [t.latency_ms for t in state.turn_records]
    fields = {
        **context,
        "run_id": state.run_id,
        "task_id": task_id,
        "question": question,
        "epoch": epoch,
        "status": ERROR if state.provider_unavailable else state.status,
        "interruption": state.interruption,
        "error": state.error,
        "turns": state.turns,
        "tool_runs": state.tool_runs,
        "prompt_tokens": state.prompt_tokens,
        "completion_tokens": state.completion_tokens,
        "cost_usd": round(state.cost_usd, 8),
        "wall_ms": round(state.wall_ms - queue_ms, 1),
        "queue_ms": round(queue_ms, 1),
        "turn_latency_ms": latencies,
        "turn_timings": [t.timings for t in state.turn_records],
        "turn_finish_reasons": [t.finish_reason for t in state.turn_records],
        "stop_reason": state.stop_reason,
        "mean_turn_ms": mean(latencies),
        "p95_turn_ms": p95(latencies),
        "model_ms": round(state.model_ms, 1),
        "tool_ms": round(state.tool_ms, 1),
        "tool_wall_ms": round(state.tool_wall_ms, 1),
        "harness_ms": round(state.harness_ms - queue_ms, 1),
        "tool_bugs": [f"{r.name}: {r.error}" for r in state.tool_log if r.bug],
        # Calls whose arguments failed the tool's JSON Schema (the harness checks them again).
        "invalid_calls": sum(r.invalid for r in state.tool_log),
        # Calls the server refused to make (arguments its schema rejects, a schema echoed...).
        "refused_calls": sum(len(t.refused_calls or []) for t in state.turn_records),
        "tools_called": [r.name for r in state.tool_log],
        "call_shaped_text": call_shaped_text(state),
        "answer": state.answer,
        "checks": checks,
        "correct": bool(checks) and all(c["passed"] for c in checks),
        "trace_path": trace_path,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return RunRecord.model_validate(fields)


def not_run_record(
    context: dict[str, Any], task_id: str, question: str, epoch: int, reason: str
) -> RunRecord:
    fields = {
        **context,
        "run_id": None,
        "task_id": task_id,
        "question": question,
        "epoch": epoch,
        "status": NOT_RUN,
        "error": reason,
        "turns": 0,
        "tool_runs": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "wall_ms": 0.0,
        "queue_ms": 0.0,
        "turn_latency_ms": [],
        "answer": None,
        "checks": [],
        "correct": False,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return RunRecord.model_validate(fields)


def keep_compact(path: Path) -> Path:
    """``path`` as kept: gzipped in its place when larger than COMPRESS_ABOVE."""
    if path.stat().st_size <= COMPRESS_ABOVE:
        return path
    packed = path.with_name(path.name + ".gz")
    # mtime 0: the same content always packs to the same bytes.
    with open(path, "rb") as src, gzip.GzipFile(packed, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return packed


def read_text(path: Path) -> str:
    """A kept file's text, whether or not it was gzipped."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    return path.read_text(encoding="utf-8")


def task_folder(run_file: Path) -> Path:
    """Where a run file's tasks keep their state files and traces."""
    return run_file.with_name(run_file.stem + ".runs")


def kept_file(run_file: Path, name: str) -> Path | None:
    """A task's file beside ``run_file`` (``RUN_ID.json``, ``RUN_ID.trace.jsonl``), plain or
    gzipped; None when it was not kept."""
    plain = task_folder(run_file) / name
    packed = plain.with_name(name + ".gz")
    return plain if plain.exists() else packed if packed.exists() else None


def run_files(paths: Sequence[Path]) -> list[Path]:
    """The run files named, and those inside the folders named (``*.jsonl``, in name order;
    an unfinished ``.jsonl.partial`` only when named); a path that is neither is a
    :class:`RunFileError` that names it."""
    found: dict[Path, Path] = {}  # a file named twice (itself, and in its folder) is read once
    for path in paths:
        if path.is_dir():
            found.update((p.resolve(), p) for p in sorted(path.glob("*.jsonl")))
        elif path.is_file():
            found.setdefault(path.resolve(), path)
        else:
            raise RunFileError(f"{path}: no such run file or folder")
    return list(found.values())


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a missing file, or a line that is no JSON object, is a
    :class:`RunFileError` that names the file and the line."""
    records = []
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise RunFileError(f"{path}: cannot read the run file ({exc.strerror})") from exc
    with f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise RunFileError(
                        f"{path}, line {number}: not a JSON record ({exc.msg})"
                    ) from exc
                if not isinstance(record, dict):
                    raise RunFileError(f"{path}, line {number}: not a JSON object")
                records.append(record)
    return records


def _total(values: list[int | None]) -> int | None:
    """The sum, or None when a record was written before the figure was counted."""
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def summarize(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Totals of one run file; pass^k counts a task only if every epoch got it right."""
    latencies = [ms for r in records for ms in r.turn_latency_ms]
    answered = [r for r in records if not is_error(r)]
    by_task: dict[str, list[bool]] = {}
    for r in answered:
        by_task.setdefault(r.task_id, []).append(r.correct)
    epochs = max((len(v) for v in by_task.values()), default=0)
    first = records[0] if records else None
    correct = sum(r.correct for r in answered)
    return {
        "label": first and first.label,
        "model": first and first.model,
        "model_sha256": first and first.model_sha256,
        "backend": first and first.backend,
        "tool_grammar": first and first.tool_grammar,
        "draft": first and first.draft,
        "loop": first and first.loop,
        "policy": first.policy.model_dump() if first and first.policy else None,
        "tasks": len(by_task),
        "epochs": epochs,
        "runs": len(answered),
        "correct": correct,
        "accuracy": correct / len(answered) if answered else 0.0,
        # Task runs the machinery ended or that never ran: in no accuracy, rerun by --resume.
        "errors": len(records) - len(answered),
        "pass_k": (sum(all(v) for v in by_task.values()) / len(by_task)) if by_task else 0.0,
        # pass^k for k = 1 .. epochs (τ-bench's estimator); one value where each task ran once.
        "pass_hat_k": pass_hat_curve(records),
        "task_accuracy": asdict(accuracy(records)),
        "not_run": sum(r.status == NOT_RUN for r in records),
        "turns": sum(r.turns for r in records),
        "tool_runs": sum(r.tool_runs for r in records),
        # None for records written before the harness checked arguments against the schema.
        "invalid_calls": _total([r.invalid_calls for r in records]),
        "refused_calls": _total([r.refused_calls for r in records]),
        "call_shaped_text": _total([r.call_shaped_text for r in records]),
        "wall_ms": round(sum(r.wall_ms for r in records), 1),
        "mean_turn_ms": mean(latencies),
        "p95_turn_ms": p95(latencies),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost_usd": round(sum(r.cost_usd for r in records), 6),
        "harness_ms": round(sum(r.harness_ms or 0.0 for r in records), 1),
        "machine": first and first.machine,
        # The sql family's figures (steps, SQL errors and recoveries, timeouts, rows).
        "analyst": analyst_figures(records),
    }


def errors_note(summary: dict[str, Any]) -> str:
    """``  errors=N (rerun with --resume)`` for a run with errors, else nothing."""
    errors = summary.get("errors") or 0
    return f"  errors={errors} (rerun with --resume)" if errors else ""


def summary_markdown(name: str, summary: dict[str, Any], records: Sequence[RunRecord]) -> str:
    rows = [
        [
            r.task_id,
            r.epoch,
            r.status,
            r.turns,
            r.tool_runs,
            f"{r.wall_ms:,.0f}",
            "" if r.mean_turn_ms is None else f"{r.mean_turn_ms:,.0f}",
            "✓" if r.correct else "✗",
            (r.answer or "")[:80],
        ]
        for r in records
    ]
    head = ["task", "epoch", "status", "turns", "tools", "wall ms", "mean turn ms", "correct"]
    lines = [
        f"# {name}",
        "",
        f"Model `{summary['model']}` (sha256 `{summary['model_sha256']}`), backend "
        f"`{summary['backend']}`, loop `{json.dumps(summary['loop'])}`, policy "
        f"`{json.dumps(summary.get('policy'))}`.",
        "",
        table([*head, "answer"], rows),
        total_line(summary),
        "",
    ]
    if summary.get("analyst"):
        lines += ["## What the chapter measures", "", analyst_markdown(summary["analyst"]), ""]
    return "\n".join(lines)


def total_line(summary: dict[str, Any]) -> str:
    """The one line that totals a run file, as the runner prints it and its summary ends."""
    mean_turn = summary["mean_turn_ms"]
    return (
        f"TOTAL turns={summary['turns']}  toolruns={summary['tool_runs']}  "
        f"wall={summary['wall_ms']:,.0f}ms  mean turn="
        f"{'n/a' if mean_turn is None else f'{mean_turn:,.0f}ms'}  "
        f"correct={accuracy_of(summary)}{errors_note(summary)}  cost=${summary['cost_usd']:.6f}"
        + (f"  elapsed={summary['elapsed_ms'] / 1000:,.1f}s" if "elapsed_ms" in summary else "")
    )
