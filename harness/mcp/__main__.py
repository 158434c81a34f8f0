"""``python -m harness.mcp serve --workspace DIR [--db URL]``: this project's tools over MCP
(stdio), for any MCP client. A desktop client's entry::

    {"mcpServers": {"loopbench": {"command": "python",
        "args": ["-m", "harness.mcp", "serve", "--workspace", "/path/to/folder"]}}}
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from harness.exactargs import ExactParser
from harness.mcp.serve import serve
from harness.sql import SQLError, is_postgres_url


def main(argv: list[str] | None = None) -> int:
    parser = ExactParser(prog="python -m harness.mcp")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve the file and SQL tools over MCP on stdin/stdout")
    run.add_argument("--workspace", type=Path, help="the folder the file tools work on")
    run.add_argument("--db", help="a SQLite file or a postgresql:// URL for run_sql, describe")
    args = parser.parse_args(argv)
    if args.workspace is None and args.db is None:
        parser.error("name --workspace, --db or both: the tools work on one of them")
    if args.workspace is not None and not args.workspace.is_dir():
        parser.error(f"--workspace {args.workspace}: not a folder")
    if args.db is not None and not is_postgres_url(args.db) and not Path(args.db).is_file():
        parser.error(f"--db {args.db}: no such SQLite file")
    with tempfile.TemporaryDirectory(prefix="loopbench-mcp-") as scratch:
        try:
            anyio.run(serve, args.workspace, args.db, Path(scratch))
        except SQLError as exc:
            print(f"python -m harness.mcp: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
