"""The worker's end of the pipe (``evals/pipe.py``): loaded by path by each helper script
(tau2's worker, BFCL's checker), which runs under its own virtualenv's interpreter and imports
nothing of the project's packages.

Answers go out on a descriptor kept for them: before anything else runs, the process's stdout
is pointed at its stderr (Python's ``sys.stdout`` and descriptor 1 alike), so whatever a
library prints lands in the log, never among the answers. Every line is ASCII-only JSON, and
each answer carries the number of its request (``pipe_id``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

Answer = Callable[[dict[str, Any]], dict[str, Any]]
# The key of a request's number, which its answer echoes (evals/pipe.py's ID).
ID = "pipe_id"


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
