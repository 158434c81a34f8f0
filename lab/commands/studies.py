"""The studies' commands: ``experiment``, ``experiments``, ``bench``, ``adversaries``."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from evals.tasks import DEFAULT_TASKS
from lab.studies import adversaries
from lab.studies.experiments.suite import EXPERIMENTS, run_experiments, write
from lab.studies.serving.suite import PARTS as BENCH_PARTS
from lab.studies.serving.suite import rerender, run_bench


def register(commands: Any) -> None:
    one = commands.add_parser("experiment", help="run one of the chapter's experiments")
    one.add_argument("name", choices=sorted(EXPERIMENTS))
    every = commands.add_parser("experiments", help="run them all; write results/experiments.*")
    every.add_argument("--out", type=Path, default=Path("results"))
    bench = commands.add_parser("bench", help="benchmarks; write results/bench.md and .json")
    bench.add_argument("--parts", nargs="+", choices=sorted(BENCH_PARTS), default=list(BENCH_PARTS))
    bench.add_argument("--out", type=Path, default=Path("results"))
    bench.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite bench.md and the docs blocks from bench.json; run nothing",
    )
    adv = commands.add_parser(
        "adversaries",
        help="judge the grader: strategies derived from each task's typed answer, then the "
        "scripted adversaries and the oracle under every preset; results/adversaries-TASKSET.*",
    )
    adv.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    adv.add_argument("--base-url", help="a running scripted server (default: one in-process)")
    adv.add_argument("--out", type=Path, default=Path("results"))
    adv.add_argument(
        "--strategies-only",
        action="store_true",
        help="the strategies derived from each task's typed answer and the oracle under every "
        "preset, not the scripted adversaries",
    )
    adv.add_argument(
        "--solvers",
        nargs="+",
        default=[],
        metavar="SOLVER",
        help="also run the oracle and the adversaries under these workflows (a column each)",
    )
    one.set_defaults(handler=experiment)
    every.set_defaults(handler=experiments)
    bench.set_defaults(handler=benchmark)
    adv.set_defaults(handler=adversaries_command)


def experiment(args: argparse.Namespace) -> int:
    (result,) = asyncio.run(run_experiments([args.name]))
    print(result.markdown())
    return 0


def experiments(args: argparse.Namespace) -> int:
    results = asyncio.run(run_experiments(list(EXPERIMENTS)))
    write(results, args.out)
    print(f"wrote {args.out / 'experiments.md'} and {args.out / 'experiments.json'}")
    return 0


def benchmark(args: argparse.Namespace) -> int:
    if args.render_only:
        rerender(args.out)
        print(f"wrote {args.out / 'bench.md'} from {args.out / 'bench.json'}")
        return 0
    run_bench(args.parts, args.out, echo=lambda line: print(line, flush=True))
    print(f"wrote {args.out / 'bench.md'} and {args.out / 'bench.json'}")
    return 0


def adversaries_command(args: argparse.Namespace) -> int:
    return adversaries.main(
        args.tasks, args.base_url, args.out, args.strategies_only, args.solvers or None
    )
