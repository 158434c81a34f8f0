"""The worker's end of the pipe (``evals/pipe.py``), and the launcher of every worker: each
helper (tau2's worker, BFCL's checker) runs as ``python -I workerside.py WORKER`` under its own
virtualenv's interpreter and imports nothing of the project's packages.

The launcher first takes the answers' channel: the process's stdout (Python's ``sys.stdout``
and descriptor 1 alike) is pointed at its stderr, so whatever a library prints, at import or
later, lands in the log, never among the answers. Then it loads WORKER by path, as a package
over its own folder (its ``from . import x`` reads ``x.py`` beside it), and serves it: WORKER
defines ``answer(request)``, ``hello()`` (what the first line says, after its setting up) and,
if it holds anything, ``close()`` (run once serving ends: stdin closed, or hello failed).
Every line is ASCII-only JSON, and each answer carries the number of its request
(``pipe_id``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

Answer = Callable[[dict[str, Any]], dict[str, Any]]
# The key of a request's number, which its answer echoes (one no request of a worker's uses).
ID = "pipe_id"
# The name the launched worker is loaded under (a package over its folder).
WORKER = "loopbench_worker"
# The answers' channel, once the launcher has taken it (a test's worker writes on it itself).
channel: TextIO | None = None


def answers_channel() -> TextIO:
    """The descriptor answers go out on (the process's stdout as it started), with stdout
    itself pointed at stderr from now on."""
    channel = os.fdopen(os.dup(1), "w", encoding="ascii", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, ensure_ascii=True) + "\n")
    channel.flush()


def _error(exc: Exception) -> dict[str, Any]:
    return {"error": f"{exc.__class__.__name__}: {exc}", "trace": traceback.format_exc()}


def serve(channel: TextIO, answer: Answer, hello: dict[str, Any]) -> None:
    """Say ``hello``, then answer each request line until stdin closes. A request that raises
    is answered with the error; the worker goes on."""
    send(channel, {"ready": True, **hello})
    for line in sys.stdin:
        if not line.strip():
            continue
        ident = None
        try:
            request = json.loads(line)
            ident = request.pop(ID, None)
            text = json.dumps({**answer(request), ID: ident}, ensure_ascii=True)
        except Exception as exc:  # one bad request must not end the worker
            text = json.dumps({**_error(exc), ID: ident}, ensure_ascii=True)
        channel.write(text + "\n")
        channel.flush()


def load(path: Path, name: str) -> ModuleType:
    """The module at ``path``, loaded by path under ``name`` as a package over its own folder:
    its relative imports find the modules beside it, and nothing else of the project."""
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    if name in sys.modules:
        raise ImportError(f"{name} is loaded already")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def launch(argv: list[str]) -> None:
    """``workerside.py WORKER [ARGS]``: the answers' channel taken, WORKER loaded (``sys.argv``
    is ``[WORKER, ARGS...]`` while it loads), said hello and served until stdin closes; its
    ``close()`` after, whatever ended it."""
    global channel
    channel = answers_channel()
    if len(argv) < 2:
        raise SystemExit("usage: python -I workerside.py WORKER [ARGS]")
    sys.argv = argv[1:]
    worker = load(Path(argv[1]).resolve(), WORKER)
    try:
        serve(channel, worker.answer, worker.hello())
    finally:
        close = getattr(worker, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    sys.modules["workerside"] = sys.modules[__name__]  # a worker that needs the channel
    launch(sys.argv)
