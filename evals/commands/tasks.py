"""The task sources' command: ``generate``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.tasks.sources import SOURCES, SPLITS


def register(commands: Any) -> None:
    gen = commands.add_parser(
        "generate",
        help="write a generated task set (files: each task over its own workspace; sql: "
        "questions over a generated bank) that --tasks reads",
    )
    gen.add_argument(
        "--family",
        choices=sorted(SOURCES),
        default="files",
        help="; ".join(f"{s.name}: {s.help}" for s in SOURCES.values()) + " (default files)",
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


def _generate(args: argparse.Namespace) -> int:
    source = SOURCES[args.family]
    seed = args.seed if args.seed is not None else source.default_seed(args.split)
    if args.n < 1:
        print("evals generate: --n must be at least 1", file=sys.stderr)
        return 2
    taskset = source.write(seed, args.n, args.out, args.split)
    short = len(taskset.tasks) < args.n
    note = f" (only {len(taskset.tasks)} questions have unique answers there)" if short else ""
    print(f"wrote {args.out}: {taskset.name}, {len(taskset.tasks)} tasks{note}")
    return 0
