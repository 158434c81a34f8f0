"""``python -m evals``: every subcommand registers its own parser and handler; this file only
lists them and reports an error any of them raises on purpose as one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from evals.commands import (
    bfcl,
    conformance,
    databases,
    leaderboard,
    reports,
    run,
    scoring,
    studies,
    sweep,
    tasks,
    tau2,
)
from evals.errors import EvalError
from harness.errors import HarnessError
from harness.exactargs import ExactParser

# Each adds its subcommands (``commands.add_parser``) with ``handler`` set; the order is the
# order of ``--help``.
COMMANDS: tuple[Callable[[Any], None], ...] = (
    run.register,
    sweep.register,
    leaderboard.register,
    bfcl.register,
    tau2.register,
    studies.register,
    conformance.register,
    reports.register,
    scoring.register,
    tasks.register,
    databases.register,
)


def parser() -> argparse.ArgumentParser:
    found = ExactParser(prog="python -m evals")
    commands = found.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(commands)
    return found


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (EvalError, HarnessError) as exc:
        print(f"evals {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): what it read is all it wanted, and nothing is wrong.
        # Python would complain once more flushing stdout at exit; point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
