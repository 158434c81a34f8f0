"""The task sources' command: ``generate``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.tasks import generate


def register(commands: Any) -> None:
    gen = commands.add_parser(
        "generate",
        help="write a generated task set (each task over its own workspace) that --tasks reads",
    )
    gen.add_argument(
        "--family",
        choices=["files", "sql"],
        default="files",
        help="files: questions over a workspace of files (default); sql: an analyst's "
        "questions over a generated bank, asked through run_sql and describe",
    )
    gen.add_argument(
        "--split",
        choices=sorted(generate.SPLITS),
        help="dev: seeds 0-99, to tune on; test: seeds 1000-1099, to report on (picks the "
        "split's first seed when --seed is not given; recorded in the task set's name)",
    )
    gen.add_argument("--seed", type=int, help="default: the split's first seed, else 0")
    gen.add_argument("--n", type=int, default=60, help="how many tasks (default 60)")
    gen.add_argument("--out", type=Path, required=True, help="the task file to write (JSON)")
    gen.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    source = generate if args.family == "files" else _sql()
    seed = args.seed if args.seed is not None else source.default_seed(args.split or "dev")
    if args.n < 1:
        print("evals generate: --n must be at least 1", file=sys.stderr)
        return 2
    if args.family == "sql":
        out, taskset = _sql().write(seed, args.n, args.out, args.split)
        short = f" (the bank has {len(taskset.tasks)} questions with unique answers)"
        note = short if len(taskset.tasks) < args.n else ""
        print(f"wrote {out}: {taskset.name}, {len(taskset.tasks)} tasks{note}")
        return 0
    out = generate.write(seed, args.n, args.out, args.split)
    print(f"wrote {out}: {generate.set_name(seed, args.n, args.split)}, {args.n} tasks")
    return 0


def _sql() -> Any:
    from evals.tasks import sql

    return sql
