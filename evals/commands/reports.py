"""The report's commands: ``compare``, ``view``, ``screenshot``, ``export``, ``power``,
``sql-report``, ``workflows-report``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.errors import RunFileError
from evals.report import paired_pages, power, quoted, sql_page
from evals.report.compare import compare, paired_table
from evals.report.docs import fill
from evals.report.inspect_log import export
from evals.report.screenshot import screenshot
from evals.report.sql_page import report as sql_report
from evals.report.view import write_report
from evals.report.workflows import DOCS as WORKFLOWS_DOCS
from evals.report.workflows import FINDINGS, default_model_table, default_sources, ladder_table
from evals.report.workflows import report as workflows_report
from evals.run.runner import RESULTS

RUNS = RESULTS / "runs"


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
    view.add_argument("--out", type=Path, default=Path("results/report.html"))
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
    shot = commands.add_parser(
        "screenshot", help="the first screen of an HTML report as a PNG (system chromium)"
    )
    shot.add_argument("report", type=Path, help="the report (python -m evals view writes it)")
    shot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    shot.set_defaults(handler=_screenshot)
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
    pairs = commands.add_parser(
        "paired-report",
        help="the committed paired comparisons the docs quote (the loop policies' and the MCP "
        "tool surfaces'): a page for each under results/, and their verdicts in the docs",
    )
    pairs.set_defaults(handler=_paired_report)
    sql = commands.add_parser(
        "sql-report",
        help="the sql family's runs side by side with the chapter's figures, and named pairs "
        "compared task by task",
    )
    sql.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    sql.add_argument(
        "--pair", nargs=2, type=Path, action="append", default=[], metavar=("A", "B"),
        help="compare B against A over the questions both ran (repeatable)",
    )  # fmt: skip
    sql.add_argument("--out", type=Path, help="write the Markdown here")
    sql.set_defaults(handler=_sql_report)
    flows = commands.add_parser(
        "workflows-report",
        help="workflow or agent: each task set's runs by model and solver, the best workflow "
        "against the best agent run per model, paired task by task",
    )
    flows.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="run files, or folders of them (default: the workflows, the sweep's runs, the "
        "generated-set and SQL runs); with none given, also writes docs/findings.md's table",
    )
    flows.add_argument("--out", type=Path, help="write the Markdown here")
    flows.set_defaults(handler=_workflows_report)


def compare_command(args: argparse.Namespace) -> int:
    if args.paired:
        return _paired(args)
    print(compare(args.files, args.out, args.plots))
    if args.out is not None and args.out.resolve() == quoted.SUMMARY:  # the committed runs
        for line in quoted.write_quoted():
            print(line, file=sys.stderr)
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


def _screenshot(args: argparse.Namespace) -> int:
    print(f"wrote {screenshot(args.report, args.out)}")
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


def _sql_report(args: argparse.Namespace) -> int:
    written = _written(args, sql_report(args.files, [tuple(p) for p in args.pair]))
    if args.out is not None and args.out.resolve() == sql_page.SUMMARY:  # the committed runs
        for name, text in sql_page.docs_blocks():
            fill(sql_page.DOCS, name, text)
    return written


def _paired_report(args: argparse.Namespace) -> int:
    for path in paired_pages.write():
        print(f"wrote {path.relative_to(paired_pages.ROOT)}")
    return 0


def _workflows_report(args: argparse.Namespace) -> int:
    files = args.files or default_sources()
    if not args.files:
        ladder = ladder_table(files)
        fill(FINDINGS, "workflows-ladder", ladder)
        fill(WORKFLOWS_DOCS, "workflows-ladder", ladder)
        fill(WORKFLOWS_DOCS, "workflows-default", default_model_table(files))
    return _written(args, workflows_report(files))


def _written(args: argparse.Namespace, text: str) -> int:
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0
