"""``relink``: run files' trace paths made relative to each run file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evals.record import relink, run_files


def register(commands: Any) -> None:
    links = commands.add_parser(
        "relink",
        help="rewrite run files' trace paths relative to each run file (as new runs write them)",
    )
    links.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    links.set_defaults(handler=_relink)


def _relink(args: argparse.Namespace) -> int:
    total = 0
    for run_file in run_files(args.files):
        changed = relink(run_file)
        total += changed
        if changed:
            print(f"{run_file}: {changed} trace paths made relative")
    print(f"{total} records relinked")
    return 0
