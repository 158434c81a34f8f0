"""The eval runner: every task of a task set through the real loop, one at a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from evals.records import (
    NOT_RUN,
    code_version,
    keep_compact,
    machine,
    not_run_record,
    read_records,
    summarize,
    summary_markdown,
    task_folder,
)
from evals.records import task_record as make_record
from evals.scoring import score
from evals.tasks import DEFAULT_TASKS, Task, load_tasks
from harness.approvals import reject
from harness.faults import crash_point
from harness.loop import LoopConfig, run_loop
from harness.persist import state_path
from harness.policies import ToolErrorPolicy
from harness.presets import PLAIN, Policy, apply, preset
from harness.providers import provider
from harness.state import RunState, new_run
from harness.steering import system_prompt
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
    policy: Policy = field(default_factory=lambda: preset(PLAIN))
    task_timeout_s: float | None = None  # wall clock per task run; the run is then interrupted
    resume: Path | None = None  # a run file (or its .partial) whose finished tasks are kept


# What a resumed eval takes from the one it continues (everything but where the server is).
RESUMED = (
    "model",
    "tasks",
    "epochs",
    "max_turns",
    "budget_usd",
    "tool_errors",
    "label",
    "approvals",
    "task_timeout_s",
    "api",
)


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


def default_out(label: str, folder: Path = RESULTS / "runs") -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{slug(label)}.jsonl"


def loop_config(settings: EvalSettings) -> LoopConfig:
    base = LoopConfig(
        max_turns=settings.max_turns,
        max_budget_usd=settings.budget_usd,
        tool_errors=settings.tool_errors,
        timeout_s=settings.task_timeout_s,
    )
    return apply(base, settings.policy)


async def run_task(
    task: Task, settings: EvalSettings, model: str, run_id: str, scratch: Path, keep: Path
) -> RunState:
    """One task on a fresh workspace; its state file and trace are kept under ``keep``."""
    config = loop_config(settings)
    state = new_run(model, task.question, system=system_prompt(config), run_id=run_id)
    state.meta["task_tools"] = task.tools
    recorder = Recorder(state_dir=keep, trace_path=keep / f"{run_id}.trace.jsonl")
    workspace = create_workspace(scratch / run_id / "workspace")
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


def _settings_file(keep: Path) -> Path:
    return keep / "eval.json"


def resumed_settings(run_file: Path, base_url: str) -> EvalSettings:
    """The settings of the eval ``run_file`` (or its ``.partial``) belongs to, to go on with."""
    out = run_file.with_name(run_file.name.removesuffix(".partial"))
    saved_path = _settings_file(task_folder(out))
    try:
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalError(f"cannot resume {run_file}: {saved_path} is missing or unreadable") from exc
    kept = {k: saved[k] for k in RESUMED}
    kept["tasks"] = Path(kept["tasks"])
    policy = Policy(saved["policy"]["name"], saved["policy"]["settings"])
    return EvalSettings(base_url=base_url, out=out, policy=policy, resume=run_file, **kept)


def _kept_records(settings: EvalSettings, out: Path) -> list[dict[str, Any]]:
    """Finished task runs of the eval being resumed (a not-run record is not finished)."""
    if settings.resume is None:
        return []
    partial = out.with_name(out.name + ".partial")
    source = next((p for p in (partial, out) if p.exists()), None)
    if source is None:
        raise EvalError(f"cannot resume: neither {out} nor {partial} exists")
    return [r for r in read_records(source) if r["status"] != NOT_RUN]


def _durable_append(f: Any, record: dict[str, Any]) -> None:
    """One record on disk before the next task starts: a kill loses only the task in flight."""
    f.write(json.dumps(record, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())


async def run_eval(
    settings: EvalSettings,
    echo: Callable[[str], None] = print,
    after_task: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """Run every task, writing one JSONL record per task run; returns the run file.

    Records go to ``RUN_FILE.partial`` as each task finishes (fsynced); the run file appears
    only when every task has a record. ``settings.resume`` keeps the finished records of an
    interrupted eval and runs only the missing ones.
    """
    taskset = load_tasks(settings.tasks)  # a bad task file fails before any model call
    info = served_model(settings.base_url, settings.model)
    model = str(info["id"])
    shape = "" if settings.api == "openai" else f"/{settings.api}"
    label = settings.label or f"{model}@{info.get('backend', 'unknown')}{shape}"
    loop_keys = ("max_turns", "budget_usd", "tool_errors", "approvals", "task_timeout_s")
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
        "policy": settings.policy.record(),
        "task_set": taskset.name,
        "machine": machine(),
        "code_version": code_version(),
    }
    out = settings.out or default_out(label)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    keep = task_folder(out)  # each task's state file (transcript) and trace
    kept = {(r["task_id"], r["epoch"]): r for r in _kept_records(settings, out)}
    eval_id = _eval_id(keep, settings)
    order = [(t.id, e) for e in range(1, settings.epochs + 1) for t in taskset.tasks]
    total = len(order)
    scratch = Path(tempfile.mkdtemp(prefix="loopbench-eval-"))
    echo(
        f"eval {taskset.name}: {len(taskset.tasks)} tasks x {settings.epochs} epoch(s), "
        f"model {model} ({info.get('backend')}), policy {settings.policy.name}, "
        f"{settings.base_url}, {settings.api} shape"
        + (f"; resuming {out.name}: {len(kept)} of {total} kept" if settings.resume else "")
    )
    server_gone: str | None = None
    try:
        _start_partial(partial, list(kept.values()))
        with open(partial, "a", encoding="utf-8") as f:
            done = 0
            for epoch in range(1, settings.epochs + 1):
                for task in taskset.tasks:
                    done += 1
                    if (task.id, epoch) in kept:
                        continue
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
                    _durable_append(f, record)
                    crash_point("LOOPBENCH_CRASH_AFTER_TASK", str(done))
                    echo("   " + result_line(record))
                    if after_task:
                        after_task(record)
        _finish(partial, out, order)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = write_summaries(out)
    echo(total_line(summary))
    echo(f"wrote {out}")
    return out


def _eval_id(keep: Path, settings: EvalSettings) -> str:
    """The prefix of this eval's run ids, kept with its settings so a resume reuses both."""
    saved = _settings_file(keep)
    if settings.resume is not None and saved.exists():
        return str(json.loads(saved.read_text(encoding="utf-8"))["eval_id"])
    eval_id = datetime.now().strftime("%H%M%S")
    keep.mkdir(parents=True, exist_ok=True)
    fields = {k: v for k, v in asdict(settings).items() if k in RESUMED}
    fields["tasks"] = str(settings.tasks)
    fields.update(eval_id=eval_id, policy=settings.policy.record())
    saved.write_text(json.dumps(fields, indent=2) + "\n", encoding="utf-8")
    return eval_id


def _start_partial(partial: Path, records: list[dict[str, Any]]) -> None:
    """The partial file holding just ``records``, replaced in one step."""
    tmp = partial.with_name(partial.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, partial)


def _finish(partial: Path, out: Path, order: list[tuple[str, int]]) -> None:
    """The run file: the partial's records in task order, kept and new alike."""
    rank = {key: i for i, key in enumerate(order)}
    records = sorted(read_records(partial), key=lambda r: rank[(r["task_id"], r["epoch"])])
    _start_partial(partial, records)
    os.replace(partial, out)


def _reachable(base_url: str) -> bool:
    try:
        fetch_models(base_url)
    except EvalError:
        return False
    return True
