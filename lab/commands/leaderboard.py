"""``python -m lab leaderboard``: the ladder on a sized task set, resumable, with its paired
tests."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from evals.commands.run import add_key_flags, echo
from evals.errors import EvalError
from evals.run.settings import eval_loop
from evals.run.started import Started, flags
from harness.config import add_loop_flags, loop_from_args
from harness.keys import key_from, refused_on_command_line
from lab.studies.leaderboard import LeaderboardSettings, parse_entrants, run_leaderboard, write


def register(commands: Any) -> None:
    board = commands.add_parser(
        "leaderboard",
        help="each model under its presets on one task set; DIR/leaderboard.md",
        description="Runs every MODEL:PRESET without a finished run file under --out "
        "(resuming an interrupted one), serving each model in turn, then writes "
        "leaderboard.md and .json with the paired tests.",
    )
    board.add_argument("--entrants", required=True, metavar="MODEL:PRESET,...")
    board.add_argument("--tasks", type=Path, required=True)
    board.add_argument("--out", type=Path, required=True, metavar="DIR")
    board.add_argument("--base-url", help="ask this server for every model instead")
    add_key_flags(board, "--api-key-env", "--api-key", "the server's")
    add_loop_flags(board)
    board.add_argument("--epochs", type=int, default=1)
    flags(board, "the leaderboard")
    board.add_argument(
        "--report-only", action="store_true", help="run nothing: the report of what is finished"
    )
    board.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.api_key is not None:
        raise refused_on_command_line("--api-key", "--api-key-env")
    key_from("openai", args.api_key_env)
    entrants = parse_entrants(args.entrants)
    if args.epochs < 1:
        raise EvalError("--epochs must be at least 1")
    if args.report_only:
        written = write(entrants, args.out)
    else:
        if not args.tasks.is_file():
            raise EvalError(f"--tasks {args.tasks}: no such task file")
        settings = LeaderboardSettings(
            entrants=entrants,
            tasks=args.tasks,
            out=args.out,
            base_url=args.base_url.rstrip("/") if args.base_url else None,
            api_key_env=args.api_key_env,
            loop=loop_from_args(args, eval_loop(max_turns=8)),
            epochs=args.epochs,
            started=Started.from_args(args),
        )
        try:
            written = asyncio.run(run_leaderboard(settings, echo=echo))
        except KeyboardInterrupt:
            print(
                "evals: interrupted; every finished task is kept in its run's .partial file. "
                "Run the same command again to go on.",
                file=sys.stderr,
            )
            return 130
    print("wrote " + ", ".join(map(str, written)))
    return 0
