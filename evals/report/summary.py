"""A run file's summaries: its totals as JSON (``RUN.summary.json``) and as Markdown
(``RUN.summary.md``), with the figures of each environment whose tasks it ran
(:mod:`evals.report.figures`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals.markdown import table
from evals.numbers import mean, p95
from evals.record import NOT_RUN, RunRecord, is_error, read_runs
from evals.report.figures import environment_figures, environment_sections
from evals.stats import accuracy, accuracy_of, pass_hat_curve


def _total(values: list[int | None]) -> int | None:
    """The sum, or None when a record was written before the figure was counted."""
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def summarize(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Totals of one run file, and each environment's own figures over its runs."""
    summary = _totals(records)
    return {**summary, **environment_figures(records, taken=set(summary))}


def _totals(records: Sequence[RunRecord]) -> dict[str, Any]:
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
        "label": first and first.spec.label,
        "model": first and first.spec.model,
        "model_sha256": first and first.spec.model_sha256,
        "backend": first and first.spec.backend,
        "tool_grammar": first and first.spec.tool_grammar,
        "draft": first and first.spec.draft,
        "loop": first and first.spec.loop,
        # A conversation's settings (its user's, its caps), where the run held conversations.
        **({"conversation": first.spec.conversation} if first and first.spec.conversation else {}),
        "preset": first.spec.preset.model_dump() if first and first.spec.preset else None,
        "tasks": len(by_task),
        "epochs": epochs,
        "runs": len(answered),
        "correct": correct,
        "accuracy": correct / len(answered) if answered else 0.0,
        # Task runs the machinery ended or that never ran: in no accuracy, rerun by --resume.
        "errors": len(records) - len(answered),
        "pass_k": (sum(all(v) for v in by_task.values()) / len(by_task)) if by_task else 0.0,
        # Right answers that state something the workspace contradicts (None: none checked).
        "right_with_false_claim": (
            sum(bool(r.correct and r.false_claims) for r in answered)
            if any(r.false_claims is not None for r in answered)
            else None
        ),
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
        "cost_usd": _cost(records),
        **_retried(records),
        "harness_ms": round(sum(r.harness_ms or 0.0 for r in records), 1),
        "machine": first and first.spec.machine,
    }


def _cost(records: Sequence[RunRecord]) -> float | None:
    """The runs' cost added up; None (unknown) where any run's price was unknown."""
    costs = [r.cost_usd for r in records]
    return None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6)


def _retried(records: Sequence[RunRecord]) -> dict[str, Any]:
    """The provider's retries and the seconds waited on them, where there were any (a run
    without keeps the summary it always had)."""
    retries = sum(r.retries or 0 for r in records)
    if not retries:
        return {}
    return {"retries": retries, "retry_wait_s": round(sum(r.retry_wait_s or 0 for r in records), 1)}


def cost_text(summary: dict[str, Any]) -> str:
    cost = summary.get("cost_usd")
    return "unknown (no list price for this model)" if cost is None else f"${cost:.6f}"


def retries_note(summary: dict[str, Any]) -> str:
    """``  retries=N (S s waited)`` where the provider asked for retries, else nothing."""
    retries = summary.get("retries") or 0
    return f"  retries={retries} ({summary.get('retry_wait_s', 0)} s waited)" if retries else ""


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
        f"`{summary['backend']}`, loop `{json.dumps(summary['loop'])}`, "
        + (
            f"conversation `{json.dumps(summary['conversation'])}`, "
            if summary.get("conversation")
            else ""
        )
        + f"preset `{json.dumps(summary.get('preset'))}`.",
        "",
        table([*head, "answer"], rows),
        total_line(summary),
        "",
    ]
    lines += false_claim_lines(summary, records)
    lines += environment_sections(summary, taken=set(_totals([])))
    return "\n".join(lines)


def false_claim_lines(summary: dict[str, Any], records: Sequence[RunRecord]) -> list[str]:
    """The right answers that state something false about the workspace, counted apart."""
    flagged = summary.get("right_with_false_claim")
    if flagged is None:
        return []
    right = summary["correct"]
    share = f" ({100 * flagged / right:.0f} %)" if right else ""
    lines = [
        f"Right, with a false claim: {flagged} of {right} right answers{share} also state "
        "something the workspace contradicts (credited all the same; evals.scoring.claims).",
        "",
    ]
    rows = [[r.task_id, r.epoch, "; ".join(r.false_claims or [])] for r in records
            if r.correct and r.false_claims]  # fmt: skip
    if rows:
        lines += [table(["task", "epoch", "false claims"], rows)]
    return lines


def total_line(summary: dict[str, Any]) -> str:
    """The one line that totals a run file, as the runner prints it and its summary ends."""
    mean_turn = summary["mean_turn_ms"]
    return (
        f"TOTAL turns={summary['turns']}  toolruns={summary['tool_runs']}  "
        f"wall={summary['wall_ms']:,.0f}ms  mean turn="
        f"{'n/a' if mean_turn is None else f'{mean_turn:,.0f}ms'}  "
        f"correct={accuracy_of(summary)}{errors_note(summary)}  cost={cost_text(summary)}"
        + retries_note(summary)
        + (f"  elapsed={summary['elapsed_ms'] / 1000:,.1f}s" if "elapsed_ms" in summary else "")
    )


def write_summaries(path: Path, elapsed_ms: float | None = None) -> dict[str, Any]:
    """``RUN.summary.json`` and ``RUN.summary.md`` from the run file; ``elapsed_ms``: the wall
    clock of the command that finished the eval (a resume's own part only)."""
    records = read_runs(path)
    summary = summarize(records)
    if elapsed_ms is not None:
        summary["elapsed_ms"] = elapsed_ms
    stem = path.with_suffix("")
    Path(f"{stem}.summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(f"{stem}.summary.md").write_text(summary_markdown(path.name, summary, records))
    return summary


def summarize_run_file(path: Path, elapsed_ms: float | None = None) -> str:
    """The run file's summaries written; the line that totals it (what the runner prints at
    the end of an eval, given to it as ``summarize``)."""
    return total_line(write_summaries(path, elapsed_ms))
