"""The eval runner: every task of a task set through the real loop, one at a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from evals.records import (
    code_version,
    keep_compact,
    machine,
    not_run_record,
    read_records,
    summarize,
    summary_markdown,
)
from evals.records import task_record as make_record
from evals.scoring import score
from evals.tasks import DEFAULT_TASKS, Task, load_tasks
from harness.approvals import reject
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.persist import state_path
from harness.policies import ToolErrorPolicy
from harness.providers import provider
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.trace import Recorder
from harness.workspace import create_workspace

RESULTS = Path("results")


class EvalError(RuntimeError):
    """The eval cannot start (no server, bad task file); nothing was written."""


@dataclass
class EvalSettings:
    base_url: str
    model: str | None = None
    tasks: Path = DEFAULT_TASKS
    epochs: int = 1
    max_turns: int | None = 10
    budget_usd: float | None = None
    tool_errors: ToolErrorPolicy = "descriptive"
    label: str | None = None
    out: Path | None = None
    # A call that needs approval: "reject" declines it with a reason the model reads and goes
    # on (the task set is read-only); "stop" records the run as interrupted.
    approvals: str = "reject"
    api: str = "openai"  # the wire shape: openai (chat completions) or anthropic (Messages)


EVAL_REJECTION = "This evaluation runs read-only; no file may be changed."


def fetch_models(base_url: str) -> list[dict[str, Any]]:
    try:
        response = httpx.get(f"{base_url}/models", timeout=10)
        response.raise_for_status()
        data: list[dict[str, Any]] = response.json()["data"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise EvalError(
            f"no model server answers at {base_url} ({exc.__class__.__name__}). Start one with "
            "`make serve-local` (or `make serve-scripted`), or point LLM_BASE_URL / --base-url "
            "at a running server."
        ) from exc
    if not data:
        raise EvalError(f"{base_url}/models lists no model")
    return data


def served_model(base_url: str, requested: str | None) -> dict[str, Any]:
    """The /v1/models entry of the model the eval will ask for."""
    entries = fetch_models(base_url)
    if requested is None:
        return entries[0]
    return next((e for e in entries if e["id"] == requested), {"id": requested})


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:80]


def default_out(label: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return RESULTS / "runs" / f"{stamp}-{slug(label)}.jsonl"


async def run_task(
    task: Task, settings: EvalSettings, model: str, run_id: str, scratch: Path, keep: Path
) -> RunState:
    """One task on a fresh workspace; its state file and trace are kept under ``keep``."""
    state = new_run(model, task.question, system=SYSTEM_PROMPT, run_id=run_id)
    recorder = Recorder(state_dir=keep, trace_path=keep / f"{run_id}.trace.jsonl")
    workspace = create_workspace(scratch / run_id / "workspace")
    config = LoopConfig(
        max_turns=settings.max_turns,
        max_budget_usd=settings.budget_usd,
        tool_errors=settings.tool_errors,
    )
    async with provider(settings.api, settings.base_url) as client:
        await run_loop(state, client, default_tools(), workspace, config, recorder)
        while (
            settings.approvals == "reject"
            and state.interruption
            and state.interruption.get("type") == "approval"
        ):
            reject(state, state.interruption["call_id"], EVAL_REJECTION)
            await run_loop(state, client, default_tools(), workspace, config, recorder)
    return state


def result_line(record: dict[str, Any]) -> str:
    answer = (record.get("answer") or "").replace("\n", " ")
    if len(answer) > 70:
        answer = answer[:67] + "..."
    mark = "✓" if record["correct"] else "✗"
    status = "" if record["status"] == "completed" else f"  [{record['status']}]"
    return (
        f"turns={record['turns']} tools={record['tool_runs']} wall={record['wall_ms']:>8,.0f}ms"
        f'  {record["question"]}  -> "{answer}"  {mark}{status}'
    )


def total_line(summary: dict[str, Any]) -> str:
    mean_turn = summary["mean_turn_ms"]
    return (
        f"TOTAL turns={summary['turns']}  toolruns={summary['tool_runs']}  "
        f"wall={summary['wall_ms']:,.0f}ms  mean turn="
        f"{'n/a' if mean_turn is None else f'{mean_turn:,.0f}ms'}  "
        f"correct={summary['correct']}/{summary['runs']}"
    )


def write_summaries(path: Path) -> dict[str, Any]:
    records = read_records(path)
    summary = summarize(records)
    stem = path.with_suffix("")
    Path(f"{stem}.summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(f"{stem}.summary.md").write_text(summary_markdown(path.name, summary, records))
    return summary


async def run_eval(
    settings: EvalSettings,
    echo: Callable[[str], None] = print,
    after_task: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """Run every task, writing one JSONL record per task run; returns the run file."""
    taskset = load_tasks(settings.tasks)  # a bad task file fails before any model call
    info = served_model(settings.base_url, settings.model)
    model = str(info["id"])
    shape = "" if settings.api == "openai" else f"/{settings.api}"
    label = settings.label or f"{model}@{info.get('backend', 'unknown')}{shape}"
    loop_keys = ("max_turns", "budget_usd", "tool_errors", "approvals")
    loop = {k: v for k, v in asdict(settings).items() if k in loop_keys}
    context = {
        "label": label,
        "model": model,
        "model_sha256": info.get("sha256"),
        "backend": info.get("backend"),
        # How the server decodes tool calls (serve_local's --tool-grammar), when it says.
        "tool_grammar": info.get("tool_grammar"),
        "base_url": settings.base_url,
        "api": settings.api,
        "loop": loop,
        "task_set": taskset.name,
        "machine": machine(),
        "code_version": code_version(),
    }
    out = settings.out or default_out(label)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    keep = out.with_name(out.stem + ".runs")  # each task's state file (transcript) and trace
    eval_id = datetime.now().strftime("%H%M%S")
    total = settings.epochs * len(taskset.tasks)
    scratch = Path(tempfile.mkdtemp(prefix="loopbench-eval-"))
    echo(
        f"eval {taskset.name}: {len(taskset.tasks)} tasks x {settings.epochs} epoch(s), "
        f"model {model} ({info.get('backend')}), {settings.base_url}, {settings.api} shape"
    )
    server_gone: str | None = None
    try:
        with open(partial, "w", encoding="utf-8") as f:
            done = 0
            for epoch in range(1, settings.epochs + 1):
                for task in taskset.tasks:
                    done += 1
                    if server_gone:
                        record = not_run_record(
                            context, task.id, task.question, epoch, f"not run: {server_gone}"
                        )
                    else:
                        echo(f"[{done}/{total}] {task.id}: {task.question}")
                        run_id = f"{eval_id}-{slug(task.id)}-e{epoch}"
                        state = await run_task(task, settings, model, run_id, scratch, keep)
                        keep_compact(state_path(keep, run_id))
                        trace = keep_compact(keep / f"{run_id}.trace.jsonl")
                        record = make_record(
                            context=context,
                            task_id=task.id,
                            question=task.question,
                            epoch=epoch,
                            state=state,
                            checks=score(task, state),
                            trace_path=str(trace),
                        )
                        if state.status == "failed" and not _reachable(settings.base_url):
                            server_gone = f"the model server stopped answering ({state.error})"
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
                    f.flush()
                    echo("   " + result_line(record))
                    if after_task:
                        after_task(record)
        os.replace(partial, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = write_summaries(out)
    echo(total_line(summary))
    echo(f"wrote {out}")
    return out


def _reachable(base_url: str) -> bool:
    try:
        fetch_models(base_url)
    except EvalError:
        return False
    return True
