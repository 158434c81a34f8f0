"""``python -m evals power``: how large a difference a task set can tell, and how many tasks a
difference needs (:func:`evals.stats.detectable_difference`, :func:`tasks_needed`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.stats import detectable_difference, tasks_needed
from evals.tasks import DEFAULT_TASKS, TaskFileError, load_tasks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    parser.add_argument(
        "--baseline",
        type=float,
        help="the rate to beat, 0 to 1 (default: rates either side of 50 %%, the worst case)",
    )
    parser.add_argument(
        "--difference", type=float, default=10.0, help="points to detect (default 10)"
    )


def main(args: argparse.Namespace) -> int:
    try:
        n = len(load_tasks(args.tasks).tasks)
    except TaskFileError as exc:
        print(f"evals power: {exc}", file=sys.stderr)
        return 2
    if args.baseline is not None and not 0 <= args.baseline <= 1:
        print("evals power: --baseline is a rate from 0 to 1", file=sys.stderr)
        return 2
    near = "near 50 %" if args.baseline is None else f"above {100 * args.baseline:g} %"
    smallest = detectable_difference(n, args.baseline)
    print(
        f"{args.tasks}: {n} tasks. At 80 % power and 5 % two-sided significance, treating two "
        "runs as independent samples of the tasks (a paired comparison can do better):"
    )
    print(
        f"  the smallest detectable difference {near}: "
        + (f"{smallest:.0f} points" if smallest is not None else "none within 100 %")
    )
    needed = tasks_needed(args.difference, 0.5 if args.baseline is None else args.baseline)
    base = 50.0 if args.baseline is None else 100 * args.baseline
    print(
        f"  a difference of {args.difference:g} points over {base:g} %: "
        + (f"{needed} tasks" if needed is not None else "not possible (past 100 %)")
    )
    return 0
