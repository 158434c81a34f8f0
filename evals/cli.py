"""``python -m evals``: every subcommand registers its own parser and handler; this file only
lists them and reports an error any of them raises on purpose as one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from evals.commands import bfcl, databases, plugins, relink, reports, run, tasks, tau2
from evals.errors import EvalError
from harness.errors import HarnessError
from harness.exactargs import ExactParser

# Each adds its subcommands (``commands.add_parser``) with ``handler`` set; the order is the
# order of ``--help``.
COMMANDS: tuple[Callable[[Any], None], ...] = (
    run.register,
    bfcl.register,
    tau2.register,
    reports.register,
    relink.register,
    tasks.register,
    databases.register,
    plugins.register,
)


LOOPBENCH = "loopbench"
# The subcommands loopbench names otherwise (``evals.loopbench``).
_VERBS = {"run": "eval"}


Registers = tuple[Callable[[Any], None], ...]


def parser(prog: str = "python -m evals", table: Registers = COMMANDS) -> argparse.ArgumentParser:
    found = ExactParser(prog=prog)
    commands = found.add_subparsers(dest="command", required=True)
    for register in table:
        register(commands)
    if prog == LOOPBENCH:
        for command, verb in _VERBS.items():
            commands.choices[command].prog = f"{LOOPBENCH} {verb}"
    return found


def main(
    argv: list[str] | None = None, prog: str = "python -m evals", table: Registers = COMMANDS
) -> int:
    args = parser(prog, table).parse_args(argv)
    try:
        return int(args.handler(args))
    except (EvalError, HarnessError) as exc:
        said = (
            f"{LOOPBENCH} {_VERBS.get(args.command, args.command)}"
            if prog == LOOPBENCH
            else f"{prog.split()[-1]} {args.command}"
        )
        print(f"{said}: {exc}", file=sys.stderr)
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
