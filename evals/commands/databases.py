"""The SQL analyst's databases: ``serve-postgres``, ``stop-postgres``, ``load-db``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evals.database import postgres
from evals.database.sql.build import load_postgres
from evals.errors import EvalError

TASKS = Path(__file__).resolve().parent.parent / "tasks"


def register(commands: Any) -> None:
    serve = commands.add_parser(
        "serve-postgres",
        help="start a local PostgreSQL (installing Debian's postgresql if missing), load the "
        "committed sql task sets' banks and print the read-only URL for --db",
    )
    serve.add_argument("--root", type=Path, default=postgres.ROOT, help="where its data lives")
    serve.add_argument("--port", type=int, help="default: a free port")
    serve.add_argument(
        "--seed", type=int, action="append", help="a bank to load (default: the committed sets')"
    )
    serve.set_defaults(handler=_serve)
    stop = commands.add_parser("stop-postgres", help="stop the PostgreSQL serve-postgres started")
    stop.add_argument("--root", type=Path, default=postgres.ROOT)
    stop.set_defaults(handler=_stop)
    load = commands.add_parser(
        "load-db", help="load a generated bank into the PostgreSQL serve-postgres started"
    )
    load.add_argument("--root", type=Path, default=postgres.ROOT)
    load.add_argument("--seed", type=int, action="append", required=True)
    load.set_defaults(handler=_load)


def _serve(args: argparse.Namespace) -> int:
    server = postgres.start(args.root, args.port)
    seeds = args.seed or postgres.committed_seeds(TASKS)
    schemas = load_banks(server, seeds)
    print(f"postgres: listening on 127.0.0.1:{server.port}, data in {server.data}")
    print(f"postgres: banks loaded: {', '.join(schemas) or 'none'}")
    print(server.url())
    return 0


def _stop(args: argparse.Namespace) -> int:
    print("postgres: stopped" if postgres.stop(args.root) else "postgres: none was running")
    return 0


def _load(args: argparse.Namespace) -> int:
    server = postgres.running(args.root)
    if server is None:
        raise EvalError("no PostgreSQL is running: start one with make serve-postgres")
    print(f"loaded {', '.join(load_banks(server, args.seed))}")
    return 0


def load_banks(server: postgres.Server, seeds: list[int]) -> list[str]:
    """Load each seed's bank (as the owner, over the socket) and let the reader SELECT."""
    owner = server.socket_url(postgres.OWNER)
    return [load_postgres(owner, seed, postgres.READER) for seed in seeds]
