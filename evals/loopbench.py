"""``loopbench``: one command for what users do, installed with the package (``pip install .``).

``loopbench serve`` starts the local model server in the background and returns once it
answers (what ``make serve-local`` does), ``loopbench stop`` stops it, ``loopbench eval`` runs
a task set against it (``python -m evals run``), ``loopbench mcp serve`` serves this project's
tools over MCP, and every other subcommand of ``python -m evals`` (``compare``, ``view``,
``check-tasks``, ``bfcl``, ``tau2``, ``power``, ...) is there under its own name.

Each command's module is imported when that command runs (``RUNS``): the help is a fixed text
and ``stop`` needs the daemon alone, so neither waits for the eval's modules or for any
plugin; the commands that read tasks, records or settings load the plugins once, as their
registries are built.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from harness.exactargs import ExactParser
from serve_local import daemon

# What users do, in the order the help lists it; the rest are python -m evals's subcommands.
VERBS = (
    ("serve", "start the local model server in the background; returns when it answers"),
    ("stop", "stop the servers started with serve (and the project's PostgreSQL)"),
    ("eval", "run a task set against the server (python -m evals run)"),
    ("compare", "compare runs: accuracy, intervals, paired verdicts"),
    ("view", "one HTML report of the runs, each transcript a click away"),
    ("check-tasks", "check a task file (JSON or YAML): line, field, what was expected"),
    ("bfcl", "BFCL's items against the server, judged by BFCL's own checker"),
    ("tau2", "tau2-bench's conversations: the model as agent, a simulated user"),
    ("power", "how many tasks a difference needs to be seen"),
    ("mcp", "loopbench mcp serve: this project's file and SQL tools as an MCP server"),
    ("plugins", "what other packages add (environments, settings, presets, backends), what failed"),
)
HELP = (
    "usage: loopbench COMMAND [ARGS...]\n\n"
    + "\n".join(f"  {verb:<12} {text}" for verb, text in VERBS)
    + "\n\nEvery other subcommand of python -m evals runs under its own name "
    "(loopbench export, loopbench bfcl-compare, ...); loopbench COMMAND --help says more.\n"
)


def _serve(argv: list[str]) -> int:
    front = ExactParser(
        prog="loopbench serve",
        description="Start the local model server in the background (flags after these go to "
        "python -m serve_local: --backend, --model, --ctx, --slots, --tool-grammar, ...).",
    )
    front.add_argument("--name", default="local", help="the server's name (default local)")
    front.add_argument("--port", type=int, default=8000)
    front.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for it")
    known, server = front.parse_known_args(argv)
    if server[:1] == ["--"]:  # loopbench serve --port 8002 -- --backend llama
        server = server[1:]
    start = ["start", known.name, str(known.port), "--timeout", str(known.timeout), "--"]
    return daemon.main([*start, *server])


# What runs a verb, as "module:function" (imported when the verb runs); a function of argv.
RUNS = {"mcp": "harness.mcp.__main__:main"}
EVALS = "evals.cli:loopbench"  # every other verb: a subcommand of python -m evals
POSTGRES = "evals.database.postgres"


def _runner(spec: str) -> Callable[[list[str]], int]:
    module, function = spec.split(":")
    found: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
    return found


def _stop(names: list[str]) -> int:
    stopped = daemon.main(["stop", *names])
    if names:  # named servers only
        return stopped
    postgres = importlib.import_module(POSTGRES)
    if not postgres.ROOT.exists():  # the project's PostgreSQL was never started here
        return stopped
    return stopped or _runner(EVALS)(["stop-postgres"])


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        return 0
    verb, rest = args[0], args[1:]
    if verb == "serve":
        return _serve(rest)
    if verb == "stop":
        return _stop(rest)
    if verb in RUNS:
        return _runner(RUNS[verb])(rest)
    return _runner(EVALS)(["run", *rest] if verb == "eval" else args)


if __name__ == "__main__":
    raise SystemExit(main())
