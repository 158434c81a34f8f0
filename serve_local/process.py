"""A server in a child process for as long as a block runs: started on a free loopback port,
waited for until it answers, stopped when the block ends, whatever ends it.

The three ways a server starts, each for its own lifetime: this one (the sweep, the
benchmarks: a server per model or per measurement); ``serve_local.daemon`` (``make
serve-local``: a server that outlives the command, found again by its pid file); and
``serve_local.inprocess`` (tests and the adversaries: an app in a thread of this process).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from serve_local.errors import StartupError


def serve_command(backend: str, **options: Any) -> list[str]:
    """``python -m serve_local --backend BACKEND`` with ``options`` as its flags, for
    :func:`server_process` (which adds the port): ``threads=2`` is ``--threads 2``, True a
    switch given, False or None an option left out, a list the flag once per value. The one
    place a study spells the server's command line."""
    command = [sys.executable, "-m", "serve_local", "--backend", backend]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            command.append(flag)
        elif isinstance(value, list | tuple):
            for item in value:
                command += [flag, str(item)]
        elif value is not None and value is not False:
            command += [flag, str(value)]
    return command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(args: list[str], timeout_s: float = 900) -> Iterator[tuple[str, float, int]]:
    """``args`` (a command that takes ``--port``) serving on a free port until the block ends;
    yields (base URL, seconds until ready, pid). A server that exits or never answers is a
    :class:`StartupError` naming its log."""
    port = free_port()
    fd, log_name = tempfile.mkstemp(prefix="bench-server-", suffix=".log")
    started = time.perf_counter()
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen([*args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise StartupError(f"{args[:4]} exited; see {log_name}")
            if time.perf_counter() - started > timeout_s:
                raise StartupError(f"{args[:4]} did not get ready; see {log_name}")
            try:
                ok = httpx.get(f"{url}/v1/models", timeout=2).status_code == 200
                health = httpx.get(f"{url}/health", timeout=2).status_code
                if ok and health in (200, 404):  # llama_cpp.server has no /health
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield f"{url}/v1", time.perf_counter() - started, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
