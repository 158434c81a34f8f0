"""``python -m evals tau2``: τ²-bench's conversations through the loop, a simulated user on the
other side, judged by τ²'s own evaluator; ``tau2-tasks`` writes a split's task file."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from evals.commands.run import add_run_flags, handle
from evals.errors import EvalError
from evals.report.tau2 import LABELS, PAGE, conversation_runs, scenarios_of, write_page
from evals.report.users import sample_turns
from evals.tasks import Task, TaskSet, Tau2Ref, load_tasks, write_taskset
from evals.tau2.tasks import build, taskset_file

DOMAINS = ("airline", "retail", "telecom")
# With --trials K above 1 and no --temperature: trials sampled here, so that pass^k means
# something (greedy trials repeat one transcript); seeds 1..K.
TRIAL_TEMPERATURE, TRIAL_SEED = 0.7, 1
# The agent's model calls over one conversation, unless --max-turns says (τ² caps a
# conversation at 200 messages of every side).
CONVERSATION_TURNS = 60


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
        "--trials",
        type=int,
        default=1,
        metavar="K",
        help="tries of each task, for pass^k (k = 1..K); above 1 they are sampled at "
        f"--temperature (default {TRIAL_TEMPERATURE}), trial t with seed --seed + t - 1 "
        f"(default {TRIAL_SEED})",
    )
    tau2.add_argument(
        "--task-ids",
        metavar="A,B",
        help="only these tasks (this project's ids, airline-2, or tau2's own)",
    )
    add_run_flags(tau2)
    tau2.set_defaults(handler=_tau2)

    report = commands.add_parser(
        "tau2-report",
        help="fill docs/tau2.md from the conversation runs committed under results/tau2/",
    )
    report.set_defaults(handler=_report)

    sample = commands.add_parser(
        "tau2-sample",
        help="draw user turns at random from the committed conversation runs, to label",
    )
    sample.add_argument("--n", type=int, default=120, help="user turns to draw (default 120)")
    sample.add_argument("--seed", type=int, default=7)
    sample.add_argument("--out", type=Path, help="default: results/tau2/labels/user-turns.jsonl")
    sample.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        metavar="LABELS",
        help="leave out the conversations of this sample (a held-out sample: repeatable)",
    )
    sample.set_defaults(handler=_sample)

    tasks = commands.add_parser("tau2-tasks", help="write a tau2 split as a task file")
    tasks.add_argument("--domain", choices=DOMAINS, required=True)
    tasks.add_argument("--split", default="test")
    tasks.add_argument("--out", type=Path, help="default: evals/tasks/tau2/DOMAIN-SPLIT.json")
    tasks.set_defaults(handler=_tasks)


def _report(_: argparse.Namespace) -> int:
    changed = write_page()
    print(f"{PAGE}: " + (", ".join(changed) + " rewritten" if changed else "unchanged"))
    return 0


def _sample(args: argparse.Namespace) -> int:
    out = args.out or LABELS
    if out.exists():
        raise EvalError(f"{out} exists (labels are never overwritten); name another --out")
    runs = conversation_runs()
    scenarios = {k: v for _, records in runs for k, v in scenarios_of(records).items()}
    exclude = frozenset(
        str(json.loads(line)["conversation"])
        for path in args.exclude
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    )
    rows = sample_turns(runs, scenarios, args.n, args.seed, exclude)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"wrote {out}: {len(rows)} user turns (seed {args.seed}) to label ok or error")
    return 0


def _tasks(args: argparse.Namespace) -> int:
    out = asyncio.run(
        build(args.domain, args.split, args.out or taskset_file(args.domain, args.split))
    )
    print(f"wrote {out}")
    return 0


def _tau2(args: argparse.Namespace) -> int:
    if args.trials < 1:
        raise EvalError("--trials must be at least 1")
    tasks = taskset_file(args.domain, args.split)
    if not tasks.exists():  # a split not committed: read from tau2's package for this run
        tasks = asyncio.run(build(args.domain, args.split, Path("results/local/tau2") / tasks.name))
    if args.task_ids:
        tasks = _only(tasks, [i for i in args.task_ids.split(",") if i])
    args.tasks, args.epochs = tasks, args.trials
    if args.max_turns is None:  # the agent's model calls over a whole conversation
        args.max_turns = CONVERSATION_TURNS
    if args.concurrency is None and args.user_base_url is None and args.resume is None:
        # A conversation's agent and user each hold a sequence of the server: one talk per
        # two slots keeps both prefixes cached (make serve-local SLOTS=2).
        args.concurrency = 1
        print("evals: one conversation at a time (its agent and its user take two slots); "
              "--concurrency N for more, with a server of 2N slots")  # fmt: skip
    if args.trials > 1 and args.temperature is None and args.resume is None:
        args.temperature = TRIAL_TEMPERATURE
        args.seed = TRIAL_SEED if args.seed is None else args.seed
        print(
            f"evals: {args.trials} trials sampled at temperature {args.temperature}, "
            f"seeds {args.seed}..{args.seed + args.trials - 1} (--temperature sets another)"
        )
    return handle(args)


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
    out = Path("results/local/tau2") / f"{taskset.name}-{slug}.json"
    subset = TaskSet(name=taskset.name, description=taskset.description, tasks=chosen)
    write_taskset(subset, out)
    return out
