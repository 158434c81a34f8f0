"""The eval runner: every task of a task set through the real loop, for one model or several,
``concurrency`` task runs in flight, their requests spread over the servers of each model."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from evals.environments import Opened
from evals.errors import EvalError
from evals.record import (
    PresetRecord,
    RunRecord,
    RunSpec,
    beside,
    keep_compact,
    preset_used,
    slug,
    task_folder,
)
from evals.registry import environment_of, held_by, recorded
from evals.run.discovery import NoListing, Server, Unreachable, discover, fetch_models
from evals.run.driver import Job, RunFile, drive
from evals.run.progress import Progress
from evals.run.recorder import not_run_record, task_record
from evals.run.resume import refuse_changed_setup
from evals.run.servers import PooledClient, ServerPool, loop_prices, served_spec, servers_for
from evals.run.settings import EvalSettings, eval_id, kept_records
from evals.run.taskrun import run_task
from evals.scoring.verdict import verdict_of
from evals.solvers import solver_named
from evals.tasks import Task, TaskSet, load_tasks
from harness.errors import KeyRefused, ProviderError
from harness.faults import crash_point
from harness.keys import key_from
from harness.persist import state_path

__all__ = ["EvalSettings", "Summarize", "fetch_models", "run_eval", "run_evals"]

# Writes a finished run file's summaries, given the eval's own wall clock in ms, and returns
# the line that totals it (``evals.report.summary.write_summaries`` with its total line).
Summarize = Callable[[Path, float], str]

# The user's own output folders, under the working folder: runs (``RUNS``) and what a command
# writes for itself (``LOCAL``: task files it derives, reports).
RUNS = Path("results/runs")
LOCAL = Path("results/local")


def default_out(label: str, folder: Path = RUNS) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{slug(label)}.jsonl"


def result_line(record: RunRecord) -> str:
    answer = (record.answer or "").replace("\n", " ")
    if len(answer) > 70:
        answer = answer[:67] + "..."
    mark = "✓" if record.correct else "✗"
    status = "" if record.status == "completed" else f"  [{record.status}]"
    # A conversation's wall is its agent's (the loop's turns); the simulated user's model
    # time is apart, beside it, so that neither reads as the talk's whole (none where no
    # user model was asked anything: a scripted user, τ²'s solo mode).
    spent = record.conversation.user_spent if record.conversation else None
    user = f" user={spent['ms']:,.0f}ms" if spent and spent.get("requests") else ""
    return (
        f"turns={record.turns} tools={record.tool_runs} wall={record.wall_ms:>8,.0f}ms{user}"
        f'  {record.question}  -> "{answer}"  {mark}{status}'
    )


def _task_and_epoch(line: dict[str, Any]) -> tuple[str, int]:
    return (line["task_id"], line["epoch"])


@dataclass
class _Eval:
    """One model's eval in progress: its settings, files, and the servers that serve it."""

    settings: EvalSettings
    servers: list[Server]
    spec: RunSpec
    out: Path
    keep: Path
    eval_id: str
    order: list[tuple[str, int]]
    kept: dict[tuple[str, int], RunRecord]
    tasks: list[Task]
    # Each environment its tasks run on, opened for this eval (by environment name).
    opened: dict[str, Opened] = field(default_factory=dict)
    server_gone: str | None = None
    # The simulated user's own server, where it has one (--user-base-url), else none.
    users: list[Server] = field(default_factory=list)
    to: RunFile = field(init=False)  # the run file, as the driver writes it

    def __post_init__(self) -> None:
        kept = [r.line() for r in self.kept.values()]
        self.to = RunFile(self.out, list(self.order), _task_and_epoch, kept)

    def todo(self) -> list[tuple[int, Task, int]]:
        """(position in the task set, task, epoch) of each task run still to do."""
        return [
            (i, t, e)
            for e in range(1, self.settings.epochs + 1)
            for i, t in enumerate(self.tasks)
            if (t.id, e) not in self.kept
        ]


def _prepare(
    settings: EvalSettings, taskset: TaskSet, servers: list[Server], echo: Callable[[str], None]
) -> _Eval:
    chosen = servers_for(servers, settings.serving.model)
    shape = "" if settings.serving.api == "openai" else f"/{settings.serving.api}"
    spec = served_spec(
        chosen,
        settings.serving.model,
        settings.label,
        shape,
        api=settings.serving.api,
        loop=settings.loop_record(),
        # The layers its tasks read: the conversation's where one has a user, the settings
        # of its own environments (``evals.environments``: a file task keeps no SQL limit).
        conversation=(
            settings.conversation_record()
            if any(t.user is not None for t in taskset.tasks)
            else None
        ),
        preset=PresetRecord(
            name=settings.preset.name,
            settings=preset_used(
                dict(settings.preset.settings), {environment_of(t).name for t in taskset.tasks}
            ),
        ),
        solver=settings.solver,
        solver_settings=solver_named(settings.solver).settings,
        temperature=settings.loop.temperature,
        task_set=taskset.name,
        task_set_hash=taskset.content_hash,
    )
    if settings.agent != "model" and settings.label is None:  # a scripted agent, not the model
        spec = spec.model_copy(update={"label": f"{settings.agent}-agent"})
    settings = priced(settings, spec)
    model, backend, label = spec.model, spec.backend, str(spec.label)
    out = settings.out or default_out(
        label if settings.solver == "agent" else f"{label}-{settings.solver}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    keep = task_folder(out)  # each task's state file (transcript) and trace
    kept = {(r.task_id, r.epoch): r for r in kept_records(settings, out)}
    refuse_changed_setup(out, list(kept.values()), spec)
    order = [(t.id, e) for e in range(1, settings.epochs + 1) for t in taskset.tasks]
    ev = _Eval(
        settings, chosen, spec, out, keep, eval_id(keep, settings), order, kept,
        taskset.tasks,
    )  # fmt: skip
    software = ", ".join(sorted({s.software for s in chosen}))
    echo(
        f"eval {taskset.name}: {len(taskset.tasks)} tasks x {settings.epochs} epoch(s), "
        f"model {model} ({backend}), "
        + (f"preset {settings.preset.name}, " if settings.solver == "agent" else "")
        + (f"solver {settings.solver}, " if settings.solver != "agent" else "")
        + f"{settings.serving.api} shape, {len(chosen)} server(s) ({software}): "
        + ", ".join(s.base_url for s in chosen)
        + (f"; resuming {out.name}: {len(kept)} of {len(order)} kept" if settings.resume else "")
    )
    if settings.epochs > 1 and not settings.loop.temperature:
        echo(
            f"warning: {settings.epochs} greedy epochs (temperature 0) repeat one transcript "
            "but where the server's arithmetic differs between requests (several decoded at "
            "once, a prompt read from its cache); pass^k and per-task variance measure that, "
            "not sampling, until --temperature T --seed S"
        )
    ungrounded = [t.id for t in taskset.tasks if not t.grounded]
    if ungrounded:
        echo(
            f"warning: {len(ungrounded)} task(s) of {taskset.name} ({', '.join(ungrounded)}) "
            "lack an answer check or an evidence check (observed, files_read): a pass there "
            "does not show that the answer came from a tool result"
        )
    return ev


def priced(settings: EvalSettings, spec: RunSpec) -> EvalSettings:
    """``settings`` with the loop pricing its turns as ``spec`` says (a hosted model at its
    provider's list price); a budget is refused where the price is unknown."""
    unknown = (spec.prices or {}).get("source") == "unknown"
    if unknown and settings.loop.max_budget_usd is not None:
        raise EvalError(
            f"--budget needs the model's price, and the price table does not know {spec.model!r} "
            "(harness/prices.py lists the ones it does)"
        )
    prices = loop_prices(spec.prices, settings.loop.prices)
    return replace(settings, loop=replace(settings.loop, prices=prices))


async def _one(
    ev: _Eval,
    task: Task,
    epoch: int,
    pool: ServerPool,
    scratch: Path,
    progress: Progress,
    after_task: Callable[[RunRecord], None] | None,
    write: Callable[[dict[str, Any]], None],
) -> None:
    environment = environment_of(task)
    opened = ev.opened[environment.name]
    seed = ev.settings.seed_of(task.id, epoch)
    if ev.server_gone:
        record = not_run_record(
            spec=ev.spec,
            environment=recorded(environment, opened.record(task, None)),
            task=task,
            epoch=epoch,
            seed=seed,
            reason=f"not run: {ev.server_gone}",
        )
    else:
        run_id = f"{ev.eval_id}-{slug(task.id)}-e{epoch}"
        client = PooledClient(pool, ev.servers)
        ran = await run_task(
            task, ev.settings, ev.spec.model, run_id, scratch, ev.keep, client, opened, epoch,
            user_client=PooledClient(pool, ev.users or ev.servers),
        )  # fmt: skip
        state = ran.state
        keep_compact(state_path(ev.keep, run_id))
        trace = keep_compact(ev.keep / f"{run_id}.trace.jsonl")
        answered = list(dict.fromkeys(client.answered))
        software = {s.base_url: s.software for s in ev.servers}
        record = task_record(
            spec=ev.spec,
            environment=recorded(environment, opened.record(task, state)),
            task=task,
            epoch=epoch,
            seed=seed,
            state=state,
            verdict=verdict_of(task, state, ran.verdicts, ran.after),
            trace_path=beside(ev.out, trace),
            conversation=ran.conversation(),
            machinery=ran.machinery,
            answered_by=answered,
            server_software=", ".join(dict.fromkeys(software[u] for u in answered)),
            queue_ms=client.queue_ms,
        )
        if state.status == "failed" and not await _any_reachable(ev.servers):
            ev.server_gone = f"the model server stopped answering ({state.error})"
    write(record.line())
    crash_point("LOOPBENCH_CRASH_AFTER_TASK", str(len(ev.kept) + ev.to.written))
    prefix = f"{ev.spec.label} " if progress.total > len(ev.order) else ""
    progress.finished(f"{prefix}{task.id} e{epoch}: {result_line(record)}")
    if after_task:
        after_task(record)


async def run_evals(
    evals: list[EvalSettings],
    echo: Callable[[str], None] = print,
    bar: bool = False,
    after_task: Callable[[RunRecord], None] | None = None,
    summarize: Summarize | None = None,
) -> list[Path]:
    """Run the task set for each settings (one model each), every task run of every model in
    one queue, ``evals[0].concurrency`` in flight (None: as many as the servers have slots).
    One run file per settings, whose summaries ``summarize`` writes (none without it).

    Records go to ``RUN_FILE.partial`` as each task finishes (fsynced); the run file appears
    only when every task has a record. ``resume`` keeps the finished records of an interrupted
    eval and runs only the missing ones.
    """
    first = evals[0].serving
    first.check()
    tasksets = [load_tasks(s.tasks) for s in evals]  # a bad task file fails before any call
    named = [s.serving.model for s in evals if s.serving.model]
    servers = discover(first.base_urls, first.key(), named, first.api)
    users = _user_servers(evals)
    runs = [_prepare(s, t, servers, echo) for s, t in zip(evals, tasksets, strict=True)]
    concurrency = first.limited([ev.servers for ev in runs])
    if concurrency > 1:
        echo(f"{concurrency} task runs in flight")
    # Epoch by epoch, task by task, the models side by side: every server has work early.
    todo = sorted(
        ((e, i, n, ev, t) for n, ev in enumerate(runs) for i, t, e in ev.todo()),
        key=lambda item: item[:3],
    )
    pool = ServerPool(first.api)
    scratch = Path(tempfile.mkdtemp(prefix="loopbench-eval-"))

    for ev in runs:
        ev.users = users.get(ev.settings.user_base_url or "", [])
        for server in ev.users:
            server.limit = max(server.limit, first.per_server or concurrency)

    def job(n: int, ev: _Eval, task: Task, epoch: int) -> Job:
        # Each eval its own scratch: run ids repeat across models.
        return partial(_one, ev, task, epoch, pool, scratch / str(n), progress, after_task)

    try:
        for n, ev in enumerate(runs):  # opened (a database checked) before any task runs
            for env, held in held_by(ev.tasks):
                ev.opened[env.name] = env.open(held, ev.settings.db, scratch / f"{env.name}-{n}")
        total = sum(len(ev.order) for ev in runs)
        started = time.monotonic()
        with Progress(total, echo, bar, already=total - len(todo)) as progress:
            jobs = [(ev.to, job(n, ev, t, e)) for e, _, n, ev, t in todo]
            raised = await drive(jobs, [ev.to for ev in runs], concurrency)
        if raised:
            if any(ev.to.written for ev in runs):
                kept = ", ".join(str(ev.to.partial) for ev in runs)
                echo(f"a task run raised; the records of the others are kept in {kept}")
            raise raised[0]
    finally:
        for ev in runs:
            for opened in ev.opened.values():
                if hasattr(opened, "aclose"):
                    await opened.aclose()
        await pool.aclose()
        shutil.rmtree(scratch, ignore_errors=True)
    for ev in runs:
        # The eval's own wall clock, from the queue's start to its last record: at concurrency
        # above 1 it is less than the task runs' wall times added up.
        elapsed = (ev.to.finished_at or started) - started
        if summarize is not None:
            line = summarize(ev.out, round(elapsed * 1000, 1))
            echo((f"{ev.spec.label}: " if len(runs) > 1 else "") + line)
        echo(f"wrote {ev.out}")
    return [ev.out for ev in runs]


async def run_eval(
    settings: EvalSettings,
    echo: Callable[[str], None] = print,
    bar: bool = False,
    after_task: Callable[[RunRecord], None] | None = None,
    summarize: Summarize | None = None,
) -> Path:
    """One model's eval; returns its run file."""
    (out,) = await run_evals([settings], echo, bar, after_task, summarize)
    return out


def _user_servers(evals: list[EvalSettings]) -> dict[str, list[Server]]:
    """The simulated users' own servers (``--user-base-url``), each asked with its key before
    any task runs: a refused key stops the eval here, once; a server that does not answer is
    left to fail each conversation (an error record, rerun by --resume)."""
    found: dict[str, list[Server]] = {}
    for settings in evals:
        url = settings.user_base_url
        if url is None or url in found:
            continue
        key = key_from("openai", settings.user_api_key_env, "--user-api-key-env", url)
        model = settings.user_model or settings.serving.model
        try:
            found[url] = discover([url], key, [model] if model else [])
        except KeyRefused:
            raise
        except Unreachable:  # down now: each conversation is an error, and --resume reruns it
            found[url] = [Server(url, [{"id": model}], "unreachable", key=key, listed=False)]
    return found


async def _any_reachable(servers: list[Server]) -> bool:
    """Whether a server still answers; asked in a thread, so the other task runs go on."""
    for server in servers:
        try:
            await asyncio.to_thread(fetch_models, server.base_url, server.key, server.api)
        except (NoListing, KeyRefused):
            return True  # it answered
        except (EvalError, ProviderError):
            continue
        return True
    return False
