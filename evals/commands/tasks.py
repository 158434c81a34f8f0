"""The task sources' commands: ``generate``, ``surface`` (a task set over MCP servers) and
``check-tasks`` (what is wrong with a task file)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.mcp.surfaces import SURFACES, over_surface
from evals.registry import environment_of, sources
from evals.tasks import load_tasks, task_file_problems, write_taskset
from evals.tasks.sources import SPLITS


def register(commands: Any) -> None:
    gen = commands.add_parser(
        "generate",
        help="write a generated task set that --tasks reads, from a source an environment "
        "declares (--source)",
    )
    gen.add_argument(
        "--source",
        "--family",
        dest="source",
        choices=sorted(sources()),
        default="files",
        help="; ".join(f"{s.name}: {s.help}" for s in sources().values()) + " (default files)",
    )
    gen.add_argument(
        "--split",
        choices=sorted(SPLITS),
        help="dev: seeds 0-99, to tune on; test: seeds 1000-1099, to report on (picks the "
        "split's first seed when --seed is not given; recorded in the task set's name)",
    )
    gen.add_argument("--seed", type=int, help="default: the split's first seed, else 0")
    gen.add_argument("--n", type=int, default=60, help="how many tasks (default 60)")
    gen.add_argument("--out", type=Path, required=True, help="the task file to write (JSON)")
    gen.set_defaults(handler=_generate)

    check = commands.add_parser(
        "check-tasks",
        help="say what is wrong with a task file (JSON or YAML): line, field, what was expected",
    )
    check.add_argument("files", type=Path, nargs="+", metavar="FILE")
    check.set_defaults(handler=_check)

    surface = commands.add_parser(
        "surface",
        help="write a task set's questions over MCP servers: our tools or a community "
        "server's, with checks both are scored by alike (for paired comparisons)",
    )
    surface.add_argument(
        "--source", "--family", dest="source", choices=sorted(SURFACES), required=True
    )
    surface.add_argument(
        "--surface",
        required=True,
        help="; ".join(f"{f}: {', '.join(s)}" for f, s in SURFACES.items()),
    )
    surface.add_argument("--tasks", type=Path, required=True, help="the task file to carry over")
    surface.add_argument("--out", type=Path, required=True)
    surface.set_defaults(handler=_surface)


def _generate(args: argparse.Namespace) -> int:
    source = sources()[args.source]
    seed = args.seed if args.seed is not None else source.default_seed(args.split)
    if args.n < 1:
        print("evals generate: --n must be at least 1", file=sys.stderr)
        return 2
    taskset = source.write(seed, args.n, args.out, args.split)
    short = len(taskset.tasks) < args.n
    note = f" (only {len(taskset.tasks)} questions have unique answers there)" if short else ""
    print(f"wrote {args.out}: {taskset.name}, {len(taskset.tasks)} tasks{note}")
    return 0


def _check(args: argparse.Namespace) -> int:
    bad = 0
    for path in args.files:
        taskset, problems = task_file_problems(path)
        if taskset is None:
            bad += 1
            for problem in problems:
                print(problem)
            continue
        held: dict[str, int] = {}
        for task in taskset.tasks:
            name = environment_of(task).name
            held[name] = held.get(name, 0) + 1
        on = ", ".join(f"{n} on {e}" for e, n in held.items())
        ungrounded = sum(not t.grounded for t in taskset.tasks)
        note = f"; {ungrounded} without an answer and an evidence check" if ungrounded else ""
        print(f"{path}: {taskset.name}, {len(taskset.tasks)} tasks ({on}){note}: OK")
    return 1 if bad else 0


def _surface(args: argparse.Namespace) -> int:
    taskset = over_surface(load_tasks(args.tasks), args.source, args.surface)
    write_taskset(taskset, args.out)
    print(f"wrote {args.out}: {taskset.name}, {len(taskset.tasks)} tasks")
    return 0
