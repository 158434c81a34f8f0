"""One task run: the loop's settings for an eval, the tools a task runs with (the file tools over
its workspace, or the SQL tools over its database), and the run itself."""

from __future__ import annotations

from pathlib import Path

from evals.environments import Opened, environment_of
from evals.run.resume import set_aside_attempt
from evals.run.settings import EvalSettings
from evals.solvers import TaskRun, solver_named
from evals.tasks import Task
from harness.approvals import reject
from harness.client import ChatClient
from harness.errors import ToolServerFailed
from harness.loop import LoopConfig, run_loop
from harness.presets import apply
from harness.state import RunState, new_run
from harness.trace import Recorder

EVAL_REJECTION = "This evaluation runs read-only; no file may be changed."


def loop_config(settings: EvalSettings, epoch: int = 1) -> LoopConfig:
    base = LoopConfig(
        max_turns=settings.max_turns,
        max_budget_usd=settings.budget_usd,
        tool_errors=settings.tool_errors,
        timeout_s=settings.task_timeout_s,
        temperature=settings.temperature,
        seed=settings.epoch_seed(epoch),
    )
    return apply(base, settings.preset)


async def run_task(
    task: Task,
    settings: EvalSettings,
    model: str,
    run_id: str,
    scratch: Path,
    keep: Path,
    client: ChatClient,
    opened: Opened,
    epoch: int = 1,
) -> RunState:
    """One task on a fresh workspace, with what its environment (``opened`` for this eval)
    gives it; its state file and trace are kept under ``keep``."""
    config = loop_config(settings, epoch)
    solver = solver_named(settings.solver)
    state = new_run(model, task.question, run_id=run_id)
    state.meta["task_tools"] = task.tools
    earlier = set_aside_attempt(keep, run_id)
    recorder = Recorder(state_dir=keep, trace_path=keep / f"{run_id}.trace.jsonl")
    if earlier is not None:
        recorder.event(state, "attempt", attempt=earlier + 1, earlier=f"{run_id}.attempt-{earlier}")
    environment = environment_of(task).name
    try:
        async with opened.setup(task, scratch / run_id / "workspace") as setup:
            run = TaskRun(task, environment, state, client, setup, config, recorder)
            await solver.solve(run)
            while (
                settings.approvals == "reject"
                and state.interruption
                and state.interruption.get("type") == "approval"
            ):
                reject(state, state.interruption["call_id"], EVAL_REJECTION)
                await run_loop(state, client, setup, config, recorder)
    except ToolServerFailed as exc:  # the tools' servers failed to start (or to stop)
        state.status, state.error, state.tool_server_failed = "failed", str(exc), True
        recorder.event(state, "run_stopped", status="failed", error=state.error)
        recorder.checkpoint(state)
    return state
