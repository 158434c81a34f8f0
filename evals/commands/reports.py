"""The report's commands: ``compare``, ``view``, ``export``, ``power``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.errors import RunFileError
from evals.report import power
from evals.report.compare import compare, paired_table
from evals.report.inspect_log import export
from evals.report.view import write_report
from evals.run.runner import LOCAL, RUNS


def register(commands: Any) -> None:
    cmp = commands.add_parser("compare", help="compare run files side by side")
    cmp.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    cmp.add_argument("--out", type=Path, help="write the Markdown table here")
    cmp.add_argument("--plots", type=Path, help="write PNG plots into this folder")
    cmp.add_argument(
        "--paired",
        action="store_true",
        help="two run files over the same tasks: the difference with a paired bootstrap "
        "interval, McNemar's exact test, and the tasks each got that the other missed",
    )
    cmp.add_argument(
        "--across-surfaces",
        action="store_true",
        help="with --paired: the same questions over two tool surfaces (evals surface), "
        "scored by the same checks",
    )
    view = commands.add_parser("view", help="write one self-contained HTML report of run files")
    view.add_argument(
        "files", nargs="*", type=Path, default=[RUNS], help="run files, or folders of them"
    )
    view.add_argument("--out", type=Path, default=LOCAL / "report.html")
    view.add_argument(
        "--focus",
        type=Path,
        action="append",
        default=[],
        metavar="RUN_FILE",
        help="the run the report opens on, against the references on its task set (repeat "
        "for several; default: the newest run given)",
    )
    view.add_argument(
        "--bfcl",
        type=Path,
        metavar="FOLDER",
        help="a folder of BFCL run files (python -m evals bfcl): a section by category",
    )
    export = commands.add_parser(
        "export", help="write run files as Inspect AI logs (.eval), one per run file"
    )
    export.add_argument("--format", choices=["inspect"], default="inspect")
    export.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    export.add_argument("--out", type=Path, required=True, help="folder for the logs")
    cmp.set_defaults(handler=compare_command)
    view.set_defaults(handler=view_command)
    export.set_defaults(handler=_export)
    sizing = commands.add_parser(
        "power",
        help="the smallest difference a task set can detect (80 %% power, 5 %% significance) "
        "and how many tasks a given difference needs",
    )
    power.add_arguments(sizing)
    sizing.set_defaults(handler=power.main)


def compare_command(args: argparse.Namespace) -> int:
    if args.paired:
        return _paired(args)
    print(compare(args.files, args.out, args.plots))
    return 0


def view_command(args: argparse.Namespace) -> int:
    files = list(dict.fromkeys([*args.files, *args.focus]))
    missing = [f for f in args.focus if not f.is_file()]
    if missing:
        raise RunFileError(f"{missing[0]}: no such run file (--focus names a run file)")
    if args.bfcl is not None and not args.bfcl.is_dir():
        raise RunFileError(f"{args.bfcl}: no such folder of BFCL run files")
    print(f"wrote {write_report(files, args.out, args.focus, args.bfcl)}")
    return 0


def _paired(args: argparse.Namespace) -> int:
    if len(args.files) != 2:
        print("evals compare --paired: name two run files, A then B", file=sys.stderr)
        return 2
    text = paired_table(args.files[0], args.files[1], across_surfaces=args.across_surfaces)
    print(text)
    for line in text.splitlines():
        if line.startswith("**Not "):  # said on the terminal too, where a pipe may hide stdout
            print(f"evals compare --paired: {line.strip('*')}", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    logs = export(args.files, args.out)
    for log in logs:
        print(f"wrote {log}")
    print(f"open them with: inspect view --log-dir {args.out}")
    return 0
