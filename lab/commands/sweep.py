"""``python -m lab sweep``: the task set under each preset, for each model."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from evals.commands.run import INTERRUPTED, add_key_flags, echo
from evals.errors import EvalError
from evals.run.settings import eval_loop
from evals.run.started import Started, flags
from evals.tasks import DEFAULT_TASKS
from harness.config import add_loop_flags, loop_from_args
from harness.keys import key_from, refused_on_command_line
from lab.studies.sweep import SweepSettings, rewrite, run_sweep


def register(commands: Any) -> None:
    sweep = commands.add_parser("sweep", help="the task set under each preset; results/sweep.*")
    sweep.add_argument(
        "--presets", "--policies", dest="presets", help="preset names, comma-separated"
    )
    sweep.add_argument(
        "--from-runs",
        nargs="+",
        type=Path,
        metavar="RUN_FILE",
        help="run nothing: write the sweep's report from these run files",
    )
    sweep.add_argument(
        "--models",
        help="comma-separated; served here one at a time (serve_local, --backend) unless "
        "--base-url names a server that serves them",
    )
    sweep.add_argument("--base-url", help="ask every model of this server instead")
    add_key_flags(sweep, "--api-key-env", "--api-key", "the server's")
    sweep.add_argument("--epochs", type=int, default=1)
    sweep.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    add_loop_flags(sweep)
    flags(sweep, "the sweep")
    sweep.add_argument("--out", type=Path, default=Path("results"))
    sweep.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.epochs < 1:
        raise EvalError("--epochs must be at least 1")
    try:
        return _sweep(args)
    except KeyboardInterrupt:
        print(f"evals: {INTERRUPTED}", file=sys.stderr)
        return 130


def _sweep(args: argparse.Namespace) -> int:
    if args.from_runs:
        written = rewrite(args.from_runs, args.out)
        print("wrote " + ", ".join(map(str, written)))
        return 0
    if not args.presets:
        raise EvalError("name the presets (--presets A,B) or --from-runs")
    if args.api_key is not None:
        raise refused_on_command_line("--api-key", "--api-key-env")
    key_from("openai", args.api_key_env)
    models: list[str | None] = [m for m in (args.models or "").split(",") if m] or [None]
    settings = SweepSettings(
        presets=[p for p in args.presets.split(",") if p],
        models=models,
        base_url=args.base_url.rstrip("/") if args.base_url else None,
        api_key_env=args.api_key_env,
        epochs=args.epochs,
        tasks=args.tasks,
        loop=loop_from_args(args, eval_loop()),
        started=Started.from_args(args),
        out=args.out,
    )
    written = asyncio.run(run_sweep(settings, echo=echo))
    print("wrote " + ", ".join(map(str, written)))
    return 0
