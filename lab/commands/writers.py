"""The commands that write this repository's docs and committed results from its runs:
``quoted`` (the figures results/summary.md's runs give to the docs), ``paired-report``,
``sql-report``, ``workflows-report``, ``screenshot``, ``tau2-report``, ``tau2-sample``,
``bfcl-docs``, ``bfcl-peer`` and ``bfcl-peer-report``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from evals.bfcl import peer
from evals.errors import EvalError
from evals.record.bfcl import read_items
from evals.run.discovery import fetch_models
from harness.client import base_url_from_env
from lab.report import bfcl_docs, bfcl_peer, paired_pages, quoted, sql_page
from lab.report.docs import fill
from lab.report.samples import sample_turns
from lab.report.screenshot import screenshot
from lab.report.sql_page import report as sql_report
from lab.report.tau2 import LABELS, PAGE, conversation_runs, scenarios_of, write_page
from lab.report.workflows import DOCS as WORKFLOWS_DOCS
from lab.report.workflows import FINDINGS, default_model_table, default_sources, ladder_table
from lab.report.workflows import report as workflows_report


def register(commands: Any) -> None:
    said = commands.add_parser(
        "quoted",
        help="the figures the docs quote from the committed runs of results/summary.md",
    )
    said.set_defaults(handler=_quoted)
    bfcl = commands.add_parser(
        "bfcl-docs", help="docs/bfcl.md's tables and counted blocks from the committed runs"
    )
    bfcl.set_defaults(handler=_bfcl_docs)
    shot = commands.add_parser(
        "screenshot", help="the first screen of an HTML report as a PNG (system chromium)"
    )
    shot.add_argument("report", type=Path, help="the report (python -m evals view writes it)")
    shot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    shot.set_defaults(handler=_screenshot)
    pairs = commands.add_parser(
        "paired-report",
        help="the committed paired comparisons the docs quote (the presets' and the MCP "
        "tool surfaces'): a page for each under results/, and their verdicts in the docs",
    )
    pairs.set_defaults(handler=_paired_report)
    sql = commands.add_parser(
        "sql-report",
        help="the SQL analyst's runs side by side with the chapter's figures, and named pairs "
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

    report = commands.add_parser(
        "tau2-report",
        help="fill docs/tau2.md from the conversation runs committed under results/tau2/",
    )
    report.set_defaults(handler=_report)

    sample = commands.add_parser(
        "tau2-sample",
        help="draw whole conversations at random from the committed conversation runs, "
        "their user turns to label (docs/tau2-user-rubric.md)",
    )
    sample.add_argument(
        "--conversations",
        type=int,
        default=24,
        metavar="N",
        help="whole conversations to draw, every user turn of each (default 24)",
    )
    sample.add_argument(
        "--runs",
        action="append",
        default=[],
        metavar="NAME",
        help="draw from this committed run only (its file name under results/tau2/, no "
        "suffix; repeatable); default: every committed conversation run",
    )
    sample.add_argument("--seed", type=int, default=7)
    sample.add_argument("--out", type=Path, help="default: results/tau2/labels/user-turns.jsonl")
    sample.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        metavar="LABELS",
        help="leave out the conversations of this sample (a held-out sample: repeatable)",
    )
    sample.set_defaults(handler=_sample)

    inspect = commands.add_parser(
        "bfcl-peer",
        help="the single-turn items of one of our BFCL runs asked again by Inspect's own BFCL "
        "(inspect_evals) through the server, and both harnesses' verdicts compared",
    )
    inspect.add_argument("--ours", type=Path, required=True, help="our BFCL run file")
    inspect.add_argument(
        "--base-url", help="the server (default: $LLM_BASE_URL or http://127.0.0.1:8000/v1)"
    )
    inspect.add_argument("--model", help="model name to ask for (default: the server's first)")
    inspect.add_argument(
        "--out",
        type=Path,
        default=Path("results/bfcl/inspect/peer.jsonl"),
        help="the peer run's file; its comparison is written beside it (.md) and Inspect's "
        "log in the same folder (default: results/bfcl/inspect/peer.jsonl)",
    )
    inspect.set_defaults(handler=bfcl_peer_command)
    peer_report = commands.add_parser(
        "bfcl-peer-report", help="rewrite the comparison page of a peer run from its file"
    )
    peer_report.add_argument(
        "peer_file", type=Path, nargs="?", default=Path("results/bfcl/inspect/peer.jsonl")
    )
    peer_report.set_defaults(handler=bfcl_peer_report_command)


def _quoted(_: argparse.Namespace) -> int:
    for line in quoted.write_quoted():
        print(line, file=sys.stderr)
    return 0


def _bfcl_docs(_: argparse.Namespace) -> int:
    bfcl_docs.write_docs_tables()
    print(f"rewrote the tables of {bfcl_docs.DOCS}")
    return 0


def _screenshot(args: argparse.Namespace) -> int:
    print(f"wrote {screenshot(args.report, args.out)}")
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


def _report(_: argparse.Namespace) -> int:
    changed = write_page()
    print(f"{PAGE}: " + (", ".join(changed) + " rewritten" if changed else "unchanged"))
    return 0


def _sample(args: argparse.Namespace) -> int:
    out = args.out or LABELS
    if out.exists():
        raise EvalError(f"{out} exists (labels are never overwritten); name another --out")
    runs = [(name, records) for name, records in conversation_runs()
            if not args.runs or name in args.runs]  # fmt: skip
    missing = sorted(set(args.runs) - {name for name, _ in runs})
    if missing:
        raise EvalError(f"no committed run {', '.join(missing)} under results/tau2/")
    scenarios = {k: v for _, records in runs for k, v in scenarios_of(records).items()}
    exclude = frozenset(
        str(json.loads(line)["conversation"])
        for path in args.exclude
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    )
    rows = sample_turns(runs, scenarios, args.conversations, args.seed, exclude)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    talks = len({row["conversation"] for row in rows})
    print(f"wrote {out}: {len(rows)} user turns of {talks} conversations (seed {args.seed}) "
          "to label ok or error by docs/tau2-user-rubric.md")  # fmt: skip
    return 0


def bfcl_peer_command(args: argparse.Namespace) -> int:
    base_url = (args.base_url or base_url_from_env()).rstrip("/")
    try:
        ids, categories = peer.peer_ids(read_items(args.ours))
        model = args.model or str(fetch_models(base_url)[0]["id"])
        ours = asyncio.run(peer.our_requests(ids, categories))
        log = peer.run_inspect(
            ids, categories, base_url=base_url, model=model, log_dir=args.out.parent
        )
        peer.write_peer_items(args.out, log, peer.log_items(log), ours, args.ours)
        comparison = bfcl_peer.write(args.out, args.out.with_suffix(".md"))
    except EvalError as exc:
        print(f"lab bfcl-peer: {exc}", file=sys.stderr)
        return 1
    agree = sum(i.ours == i.theirs for i in comparison.items)
    print(f"same verdict on {agree} of {len(comparison.items)} items")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


def bfcl_peer_report_command(args: argparse.Namespace) -> int:
    try:
        bfcl_peer.write(args.peer_file, args.peer_file.with_suffix(".md"))
    except EvalError as exc:
        print(f"lab bfcl-peer-report: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.peer_file.with_suffix('.md')}")
    return 0
