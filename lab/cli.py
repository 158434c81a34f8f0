"""``python -m lab``: the lab's subcommands, in the product's command table's way
(``evals.cli``): each registers its own parser and handler."""

from __future__ import annotations

import argparse

from evals import cli
from lab.commands import conformance, leaderboard, scoring, studies, sweep, writers

COMMANDS: cli.Registers = (
    sweep.register,
    leaderboard.register,
    studies.register,
    conformance.register,
    scoring.register,
    writers.register,
)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, prog="python -m lab", table=COMMANDS)


def parser() -> argparse.ArgumentParser:
    return cli.parser("python -m lab", COMMANDS)
