"""The servers a command starts itself, one model at a time (the sweep, the leaderboard), where
no ``--base-url`` names a running one: how they are started (``Started``: the backend and the
options its module declares, one flag each, ``flags``) and the server itself (``served``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from evals.errors import EvalError
from serve_local.backends.options import Option
from serve_local.backends.registry import DEFAULT, declared, taken_by
from serve_local.public import StartupError, serve_command, server_process


@dataclass(frozen=True)
class Started:
    """How each server a command starts is run: its backend, and the backend options given
    (by their ``dest``: ``{"threads": 2, "slots": 4}``), as ``python -m serve_local`` takes
    them; what is not given is the backend's default."""

    backend: str = DEFAULT
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Started:
        given = {dest: getattr(args, dest) for dest in _offered() if hasattr(args, dest)}
        return cls(args.backend, given)

    @property
    def slots(self) -> int:
        return int(self.options.get("slots") or 1)


def _offered() -> dict[str, tuple[Option, list[str]]]:
    """Every option a backend declares, by its ``dest``, with the backends that declare it;
    not ``--model``: a command that starts servers names the models itself."""
    found: dict[str, tuple[Option, list[str]]] = {}
    for backend, options in declared().items():
        for option in options:
            if option.dest != "model":
                found.setdefault(option.dest, (option, []))[1].append(backend)
    return found


def flags(parser: Any, starter: str) -> None:
    """``--backend`` and every option the backends declare (``serve_local.backends``; a new
    backend option is a flag here by itself) for the servers ``starter`` starts, used when no
    ``--base-url`` names a running server. An option named like one of the command's own
    flags is the command's."""
    group = parser.add_argument_group(
        f"the servers {starter} starts (python -m serve_local's options; without --base-url)"
    )
    group.add_argument("--backend", default=DEFAULT, choices=list(declared()))
    for option, backends in _offered().values():
        with suppress(argparse.ArgumentError):
            option.add_to(group, backends)


@contextmanager
def served(model: str, started: Started, echo: Callable[[str], None]) -> Iterator[str]:
    """A serve_local server for ``model`` in a child process, stopped when the block ends."""
    if started.slots > 1 and "slots" not in taken_by(started.backend, {"slots": 1}):
        raise EvalError(f"the {started.backend} backend decodes one request at a time (no --slots)")
    foreign = sorted(set(started.options) - set(taken_by(started.backend, dict(started.options))))
    if foreign:
        flags_ = ", ".join("--" + d.replace("_", "-") for d in foreign)
        raise EvalError(f"the {started.backend} backend takes no {flags_}")
    named = taken_by(started.backend, {"model": model})  # a scripted server serves its own
    command = serve_command(started.backend, **named, **started.options)
    stack = ExitStack()
    try:
        url, ready_s, pid = stack.enter_context(server_process(command, timeout_s=900))
    except StartupError as exc:
        raise EvalError(f"could not serve {model}: {exc}") from exc
    with stack:
        echo(f"serving {model} on {url} (pid {pid}, ready in {ready_s:.0f} s)")
        yield url
    echo(f"stopped the server of {model}")
