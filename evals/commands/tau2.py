"""``python -m evals tau2``: τ²-bench's conversations through the loop, a simulated user on the
other side, judged by τ²'s own evaluator; ``tau2-tasks`` writes a split's task file."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from evals.commands.run import add_run_flags, handle
from evals.errors import EvalError
from evals.record import is_error, read_runs
from evals.run.runner import LOCAL
from evals.run.settings import resumed_settings
from evals.stats import by_task, pass_hat_interval, pass_hat_k
from evals.tasks import Task, TaskSet, load_tasks, write_taskset
from evals.tau2.environment import STOP_TOOL
from evals.tau2.fields import Tau2Ref
from evals.tau2.rules import TAU2_MAX_ERRORS, TAU2_MAX_STEPS, TAU2_SEED, said
from evals.tau2.tasks import MODES, build, taskset_file

DOMAINS = ("airline", "retail", "telecom")


def register(commands: Any) -> None:
    tau2 = commands.add_parser(
        "tau2",
        help="tau2-bench's conversations (airline, retail, telecom) through the loop, "
        "judged by tau2's evaluator",
    )
    tau2.add_argument("--domain", choices=DOMAINS, default="airline")
    tau2.add_argument(
        "--split",
        default="test",
        help="test, train, or a task set tau2 names (telecom: small, full); default test",
    )
    tau2.add_argument(
        "--mode",
        choices=MODES,
        default="conversation",
        help="how tau2 holds each task: with its simulated user (conversation), the agent "
        "alone with the ticket (solo: telecom's tasks), or the agent given the task's expected "
        "actions, with the user (gt); default conversation",
    )
    tau2.add_argument(
        "--epochs",
        "--trials",
        dest="epochs",
        type=int,
        default=1,
        metavar="K",
        help="tries of each task (tau2's --num-trials; --trials is taken too), for pass^k "
        "(k = 1..K); greedy unless --temperature is given (tau2's default: greedy epochs nearly "
        "repeat one another), each task, epoch and side sampling with a seed derived from "
        f"tau2's seed of the epoch (drawn from --seed, default {TAU2_SEED})",
    )
    tau2.add_argument(
        "--max-steps",
        type=int,
        default=TAU2_MAX_STEPS,
        metavar="N",
        help="messages of both sides and the environment's answers per conversation, as tau2 "
        f"counts them, before it ends as max_steps (default {TAU2_MAX_STEPS}, tau2's)",
    )
    tau2.add_argument(
        "--max-errors",
        type=int,
        default=TAU2_MAX_ERRORS,
        metavar="N",
        help="failed tool calls of both sides per conversation before it ends as "
        f"too_many_errors (default {TAU2_MAX_ERRORS}, tau2's)",
    )
    tau2.add_argument(
        "--task-ids",
        metavar="A,B",
        help="only these tasks (this project's ids, airline-2, or tau2's own)",
    )
    add_run_flags(tau2)
    # τ²'s user has no cap of its own on its messages (the step cap holds it).
    tau2.set_defaults(handler=_tau2, max_user_turns=None)

    tasks = commands.add_parser("tau2-tasks", help="write a tau2 split as a task file")
    tasks.add_argument("--domain", choices=DOMAINS, required=True)
    tasks.add_argument("--split", default="test")
    tasks.add_argument("--mode", choices=MODES, default="conversation")
    tasks.add_argument(
        "--out", type=Path, help="default: evals/tasks/tau2/DOMAIN-SPLIT.json (-MODE.json)"
    )
    tasks.set_defaults(handler=_tasks)


def _tasks(args: argparse.Namespace) -> int:
    out = args.out or taskset_file(args.domain, args.split, args.mode)
    out = asyncio.run(build(args.domain, args.split, out, args.mode))
    print(f"wrote {out}")
    return 0


def _tau2(args: argparse.Namespace) -> int:
    if args.epochs < 1:
        raise EvalError("--epochs must be at least 1")
    tasks = taskset_file(args.domain, args.split, args.mode)
    if not tasks.exists():  # a split or mode not committed: read from tau2's package for this run
        tasks = asyncio.run(build(args.domain, args.split, LOCAL / "tau2" / tasks.name, args.mode))
    if args.task_ids:
        tasks = _only(tasks, [i for i in args.task_ids.split(",") if i])
    args.tasks = tasks
    # τ²'s agent has no cap of its own on its model calls (the step cap holds it), and keeps a
    # reply cut at the length limit as it is.
    args.loop_base = {"max_turns": None, "finish_cut_replies": False}
    if args.mode == "solo":  # τ²'s solo agent: a call on every reply, ``done`` ends it
        args.tool_choice = args.tool_choice or "always"
        args.stop_tool = args.stop_tool or STOP_TOOL
    if args.resume is None:
        args.seeds = "tau2"
        args.seed = TAU2_SEED if args.seed is None else args.seed
    # A resumed run goes on with its own settings: those are what it says and follows.
    saved = resumed_settings(args.resume, "") if args.resume is not None else None
    own_user = args.user_base_url is not None or (
        saved is not None and saved.user_base_url is not None
    )
    if args.concurrency is None and not own_user:
        # A conversation's agent and user each hold a sequence of the server: one talk per
        # two slots keeps both prefixes cached (make serve-local SLOTS=2).
        args.concurrency = 1
        print("evals: one conversation at a time (its agent and its user take two slots); "
              "--concurrency N for more, with a server of 2N slots")  # fmt: skip
    if saved is not None:
        refs = [r for t in load_tasks(saved.tasks).tasks if (r := t.fields_of(Tau2Ref))]
        mode = refs[0].mode if refs else "conversation"
        held, epochs = said(saved.held()), saved.epochs
    else:
        mode, held, epochs = args.mode, rules_said(args), args.epochs
    print(f"evals: tau2 {mode} by its runner's rules; {', '.join(held)}")
    return handle(args, after=lambda outs: _print_pass_hat(outs, epochs))


def rules_said(args: argparse.Namespace) -> list[str]:
    """The settings a τ² run is held under, each that differs from τ²'s runner's said so."""
    loop = {key: getattr(args, key, None) for key in LOOP_SAID}
    return said({**loop, "seeds": "tau2"})


# What a run's header reads of its flags: the keys of a record's ``spec.loop`` that
# evals.tau2.rules compares with τ²'s runner's.
LOOP_SAID = ("max_steps", "max_errors", "max_user_turns", "temperature", "user_temperature",
             "seed", "max_turns", "max_budget_usd", "max_total_tokens", "timeout_s")  # fmt: skip


def _print_pass_hat(outs: list[Path], epochs: int) -> None:
    """pass^1..pass^K with their intervals, as τ²'s own command ends a run."""
    for out in outs:
        records = [r for r in read_runs(out) if not is_error(r)]
        print(f"pass^k of {out} ({len(by_task(records))} tasks, {epochs} epochs; "
              "95 % interval over the tasks: drawn again, or Wilson's where each task's "
              "pass^k is 0 or 1)")  # fmt: skip
        for k in range(1, epochs + 1):
            value, interval = pass_hat_k(records, k), pass_hat_interval(records, k)
            if value is None or interval is None:
                print(f"  pass^{k}: –")
                continue
            low, high = interval
            print(f"  pass^{k}: {value:.1%} [{low:.1%}, {high:.1%}]")


def _only(tasks: Path, wanted: list[str]) -> Path:
    """A task file of the tasks of ``tasks`` that ``wanted`` names, beside the results."""
    taskset = load_tasks(tasks)

    def ids(task: Task) -> set[str]:
        """This project's id and τ²'s own."""
        ref = task.fields_of(Tau2Ref)
        return {task.id} | ({ref.task} if ref is not None else set())

    chosen = [t for t in taskset.tasks if ids(t) & set(wanted)]
    found = set().union(*(ids(t) for t in chosen))
    missing = [w for w in wanted if w not in found]
    if missing:
        raise EvalError(f"no task {', '.join(missing)} in {tasks}")
    slug = "-".join(t.id for t in chosen)[:60]
    out = LOCAL / "tau2" / f"{taskset.name}-{slug}.json"
    subset = TaskSet(name=taskset.name, description=taskset.description, tasks=chosen)
    write_taskset(subset, out)
    return out
