"""The conformance commands: ``tool-schemas`` (a corpus of tool schemas nobody here wrote,
each forced alone against a server) and ``tool-schemas-report`` (docs/server.md's tables)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from harness.client import base_url_from_env
from lab.conformance import tool_schemas
from lab.report.docs import fill
from serve_local import llama_server
from serve_local.models import DEFAULT_NAME
from serve_local.process import serve_command, server_process

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "server.md"
COMMITTED = ROOT / "results" / "tool-schemas"


def register(commands: Any) -> None:
    run = commands.add_parser(
        "tool-schemas",
        help="offer each tool schema of a corpus nobody here wrote (pydantic shapes, tau2, the "
        "community MCP servers, BFCL) alone and forced; write results/tool-schemas/LABEL.json",
    )
    run.add_argument("--base-url", help="the server (default: $LLM_BASE_URL)")
    run.add_argument(
        "--serve",
        choices=("ours", "llama-server"),
        help="start this server on the default model (16k context) for the run, and stop it "
        "after; the label defaults to its name",
    )
    run.add_argument("--model", default=DEFAULT_NAME, help="model name to ask for")
    run.add_argument("--label", help="the server's name in the tables (required with --base-url)")
    run.add_argument("--out", type=Path, help="default: results/tool-schemas/LABEL.json")
    run.add_argument(
        "--sources", nargs="+", choices=tool_schemas.SOURCES, default=list(tool_schemas.SOURCES)
    )
    run.add_argument(
        "--choice",
        choices=("named", "required"),
        default="named",
        help='how the tool is forced: tool_choice naming it, or "required" (it is the only one)',
    )
    run.set_defaults(handler=run_schemas)
    report = commands.add_parser(
        "tool-schemas-report", help="docs/server.md's tool-schema tables from the run files"
    )
    report.add_argument("runs", type=Path, nargs="*", help="default: the committed ones")
    report.set_defaults(handler=report_schemas)


# The context the corpus needs: a domain's whole tool set is offered in one request.
CTX = 16384


def run_schemas(args: argparse.Namespace) -> int:
    if args.serve is None:
        if not args.label:
            raise EvalError("name the server with --label (or start one with --serve)")
        return _run_schemas(args, (args.base_url or base_url_from_env()).rstrip("/"))
    args.label = args.label or args.serve
    if args.serve == "ours":
        command = serve_command("llama", model=DEFAULT_NAME, ctx=CTX, log_level="warning")
    else:
        command = llama_server.command(DEFAULT_NAME, None, ctx_size=CTX)
    with server_process(command) as (url, _, _):
        return _run_schemas(args, url)


def _run_schemas(args: argparse.Namespace, url: str) -> int:
    entries = asyncio.run(tool_schemas.corpus(args.sources))
    print(f"{len(entries)} tool schemas; each forced alone against {url}", flush=True)

    def show(row: tool_schemas.Forced) -> None:
        mark = "valid" if row.valid else "call, invalid" if row.call else f"no call ({row.status})"
        print(f"  {row.source:22} {row.tool:34} {mark:14} {row.ms / 1000:6.1f} s", flush=True)

    forced, offered = asyncio.run(
        tool_schemas.run_corpus(url, args.model, entries, args.choice, on_row=show)
    )
    out = args.out or COMMITTED / f"{args.label}.json"
    meta = {"model": args.model, "choice": args.choice, "sources": args.sources}
    tool_schemas.write(out, args.label, meta, forced, offered)
    valid = sum(r.valid for r in forced)
    print(f"{valid}/{len(forced)} forced calls valid; wrote {out}")
    return 0


def report_schemas(args: argparse.Namespace) -> int:
    paths = args.runs or sorted(COMMITTED.glob("*.json"))
    if not paths:
        raise EvalError("no tool-schema runs: `python -m lab tool-schemas --label NAME` writes one")
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    fill(DOCS, "tool-schemas", tool_schemas.summary_table(runs))
    fill(DOCS, "tool-schemas-sets", tool_schemas.sets_table(runs))
    print(f"wrote docs/server.md's tool-schema tables from {len(runs)} runs")
    return 0
