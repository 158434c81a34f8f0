"""``python -m evals bfcl``: its arguments and what it does with them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from evals.bfcl.items import CATEGORIES, DEFAULT_CATEGORIES
from evals.bfcl.run import BFCL_RESULTS, BfclSettings, resumed_settings, run_bfcl
from evals.commands.run import add_key_flags
from evals.errors import EvalError
from evals.record import run_files
from evals.report.bfcl import summarize_bfcl_run, write_comparison, write_summaries
from evals.report.bfcl_paired import markdown, pair_runs
from evals.run.servers import Serving
from harness.client import base_url_from_env
from harness.keys import key_from, refused_on_command_line
from harness.presets import PLAIN


def register(commands: Any) -> None:
    """The ``bfcl`` subcommand, its arguments and its handler."""
    bfcl = commands.add_parser(
        "bfcl",
        help="BFCL's function-calling items against a server, judged by BFCL's own checker; "
        "results/local/bfcl/ unless --folder or --out names another place",
    )
    add_bfcl_arguments(bfcl)
    bfcl.set_defaults(handler=bfcl_command)
    rebuild = commands.add_parser(
        "bfcl-report",
        help="rewrite every BFCL run's summaries and the folder's comparison from the records",
    )
    rebuild.add_argument("folder", type=Path, help="a folder of BFCL run files")
    rebuild.set_defaults(handler=bfcl_report_command)
    compare = commands.add_parser(
        "bfcl-compare",
        help="two BFCL runs item by item: per category, the exact paired test and what the "
        "items could detect",
    )
    compare.add_argument("run_a", type=Path, help="the baseline run file (A)")
    compare.add_argument("run_b", type=Path, help="the run set against it (B)")
    compare.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    compare.set_defaults(handler=bfcl_compare_command)


def bfcl_report_command(args: argparse.Namespace) -> int:
    """Today's summaries of committed runs, each keeping the elapsed time its run measured."""
    if not args.folder.is_dir():
        print(f"evals bfcl-report: {args.folder}: no such folder", file=sys.stderr)
        return 1
    for run_file in run_files([args.folder]):
        old = run_file.with_suffix(".summary.json")
        elapsed = json.loads(old.read_text()).get("elapsed_ms") if old.exists() else None
        write_summaries(run_file, elapsed_ms=elapsed)
        print(f"rewrote {run_file.with_suffix('')}.summary.json and .summary.md")
    print(f"wrote {write_comparison(args.folder)}")
    return 0


def bfcl_compare_command(args: argparse.Namespace) -> int:
    for path in (args.run_a, args.run_b):
        if not path.is_file():
            raise EvalError(f"{path}: no such run file")
    text = markdown(pair_runs(args.run_a, args.run_b))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


def add_bfcl_arguments(bfcl: argparse.ArgumentParser) -> None:
    """The ``bfcl`` subcommand's arguments."""
    bfcl.add_argument(
        "--base-url",
        action="append",
        metavar="URL",
        help="a server (default: $LLM_BASE_URL or http://127.0.0.1:8000/v1); repeat it to "
        "spread requests over several servers",
    )
    bfcl.add_argument("--model", help="model name to ask for (default: the server's first)")
    add_key_flags(bfcl, "--api-key-env", "--api-key", "the servers'")
    bfcl.add_argument(
        "--categories",
        default=",".join(DEFAULT_CATEGORIES),
        metavar="A,B",
        help=f"comma-separated, from {', '.join(CATEGORIES)} (default: "
        f"{', '.join(DEFAULT_CATEGORIES)})",
    )
    bfcl.add_argument("--limit", type=int, metavar="N", help="N items per category (default: all)")
    bfcl.add_argument("--seed", type=int, default=0, help="which items --limit draws (default 0)")
    bfcl.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="requests in flight (default: as many as the servers have slots, 1 for most)",
    )
    bfcl.add_argument(
        "--max-connections",
        type=int,
        metavar="M",
        help="requests in flight per server (default: --concurrency spread over the servers)",
    )
    bfcl.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="cap each reply at N tokens, sent with every item and recorded (default: the "
        "server's own cap)",
    )
    bfcl.add_argument(
        "--preset",
        "--policy",
        dest="preset",
        default=PLAIN,
        help="the preset the multi-turn conversations run under (harness/presets.json; "
        f"default {PLAIN}, the plain loop)",
    )
    bfcl.add_argument("--out", type=Path, help="run file (default: FOLDER/STAMP-LABEL.jsonl)")
    bfcl.add_argument(
        "--folder",
        type=Path,
        default=BFCL_RESULTS,
        help=f"where the run file goes when --out names none (default {BFCL_RESULTS})",
    )
    bfcl.add_argument("--label", help="name of this run in the comparison")
    bfcl.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_FILE",
        help="go on with an interrupted run (its .partial file): ask only the items without a "
        "record, with its settings; only --base-url, --concurrency and --max-connections may "
        "change",
    )


def bfcl_command(args: argparse.Namespace) -> int:
    if args.api_key is not None:
        raise refused_on_command_line("--api-key", "--api-key-env")
    key_from("openai", args.api_key_env)
    urls = [u.rstrip("/") for u in (args.base_url or [base_url_from_env()])]
    where = {
        "base_url": urls[0],
        "more_base_urls": tuple(urls[1:]),
        "concurrency": args.concurrency,
        "per_server": args.max_connections,
        "api_key_env": args.api_key_env,
    }
    try:
        if args.resume:
            settings = resumed_settings(args.resume, **where)
        else:
            settings = BfclSettings(
                serving=Serving(**where, model=args.model),
                categories=tuple(c.strip() for c in args.categories.split(",") if c.strip()),
                limit=args.limit,
                seed=args.seed,
                out=args.out,
                folder=args.folder,
                label=args.label,
                max_tokens=args.max_tokens,
                preset=args.preset,
            )
        asyncio.run(
            run_bfcl(settings, echo=_echo, bar=sys.stderr.isatty(), summarize=summarize_bfcl_run)
        )
    except EvalError as exc:
        print(f"evals bfcl: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "evals bfcl: interrupted; every judged item is kept in the .partial file. Go on with "
            "`loopbench bfcl --resume RUN_FILE.partial`.",
            file=sys.stderr,
        )
        return 130
    return 0


def _echo(line: str) -> None:
    print(line, flush=True)
