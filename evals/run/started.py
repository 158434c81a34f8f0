"""The servers a command starts itself, one model at a time (the sweep, the leaderboard), where
no ``--base-url`` names a running one: how they are started (``Started``: backend, threads, tool
grammar, slots; one flag each, ``flags``) and the server itself (``served``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from evals.errors import EvalError
from serve_local.backends.registry import DEFAULT, taken_by
from serve_local.errors import StartupError
from serve_local.process import serve_command, server_process


@dataclass(frozen=True)
class Started:
    """How each server a command starts is run."""

    backend: str = DEFAULT
    threads: int | None = None
    tool_grammar: str = "lazy"
    slots: int = 1  # requests each server decodes together (llama backend)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Started:
        return cls(args.backend, args.threads, args.tool_grammar, args.slots)


def flags(parser: Any, starter: str) -> None:
    """``--backend``, ``--threads``, ``--tool-grammar`` and ``--slots`` for the servers
    ``starter`` starts (used when no ``--base-url`` names a running server)."""
    started = Started()
    parser.add_argument(
        "--backend", default=started.backend, help=f"for the servers {starter} starts"
    )
    parser.add_argument("--threads", type=int)
    parser.add_argument("--tool-grammar", default=started.tool_grammar)
    parser.add_argument(
        "--slots",
        type=int,
        default=started.slots,
        metavar="N",
        help="requests each server started here decodes together (llama backend; the eval "
        "keeps that many task runs in flight)",
    )


@contextmanager
def served(model: str, started: Started, echo: Callable[[str], None]) -> Iterator[str]:
    """A serve_local server for ``model`` in a child process, stopped when the block ends."""
    wanted = {
        "model": model,
        "tool_grammar": started.tool_grammar,
        "threads": started.threads,
        "slots": started.slots if started.slots > 1 else None,
    }
    if started.slots > 1 and "slots" not in taken_by(started.backend, {"slots": 1}):
        raise EvalError(f"the {started.backend} backend decodes one request at a time (no --slots)")
    command = serve_command(started.backend, **taken_by(started.backend, wanted))
    stack = ExitStack()
    try:
        url, ready_s, pid = stack.enter_context(server_process(command, timeout_s=900))
    except StartupError as exc:
        raise EvalError(f"could not serve {model}: {exc}") from exc
    with stack:
        echo(f"serving {model} on {url} (pid {pid}, ready in {ready_s:.0f} s)")
        yield url
    echo(f"stopped the server of {model}")
