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
    plugins,
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
    plugins.register,
)


def parser(prog: str = "python -m evals") -> argparse.ArgumentParser:
    found = ExactParser(prog=prog)
    commands = found.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(commands)
    if prog == LOOPBENCH:  # loopbench eval runs python -m evals run
        commands.choices["run"].prog = f"{LOOPBENCH} eval"
    return found


LOOPBENCH = "loopbench"


def main(argv: list[str] | None = None, prog: str = "python -m evals") -> int:
    args = parser(prog).parse_args(argv)
    try:
        return int(args.handler(args))
    except (EvalError, HarnessError) as exc:
        command = "eval" if prog == LOOPBENCH and args.command == "run" else args.command
        print(f"{'evals' if prog != LOOPBENCH else prog} {command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`): what it read is all it wanted, and nothing is wrong.
        # Python would complain once more flushing stdout at exit; point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def loopbench(argv: list[str]) -> int:
    """``loopbench VERB``, for every verb of this command table: its help and errors name
    ``loopbench``."""
    return main(argv, prog=LOOPBENCH)
