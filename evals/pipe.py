"""A helper process in a virtualenv of its own, behind a pipe: one JSON request per line on
its stdin, one JSON answer per line on its stdout, the first line saying it is ready.

BFCL's checker and tau2's worker each pin libraries the project's environment must not hold,
so each runs as a script by path under its own interpreter (``python -I``: nothing of the
project on its path), in an empty folder of its own that is its working folder and home.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Self

from evals.errors import EvalError


class PipeWorker:
    """One helper process; requests are answered in order, one at a time.

    A subclass names its script, what it is called in messages, the error raised when it cannot
    run (with the command that installs it) and the environment it adds.
    """

    script: Path
    title: str
    install_hint: str
    unavailable: type[EvalError] = EvalError
    # One answer line's bound (a line may carry every item of a benchmark's categories).
    line_limit = 1 << 28

    def __init__(self, python: Path) -> None:
        self.python = python
        self.hello: dict[str, Any] = {}
        self.folder: str | None = None  # its working folder, the only one it may write in
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    def extra_env(self, folder: str) -> dict[str, str]:
        return {}

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        if not self.python.exists():
            raise self.unavailable(
                f"{self.title} runs in its own virtualenv and {self.python} is missing: "
                f"{self.install_hint}"
            )
        self.folder = tempfile.mkdtemp(prefix=f"loopbench-{self.script.stem}-")
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")},
            "HOME": self.folder,
            "TMPDIR": self.folder,
            **self.extra_env(self.folder),
        }
        self._proc = await asyncio.create_subprocess_exec(
            str(self.python),
            "-I",
            str(self.script),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.folder,
            env=env,
            limit=self.line_limit,
        )
        self.hello = await self._read()

    async def aclose(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            await proc.wait()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    async def _read(self) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        line = await proc.stdout.readline()
        if not line:
            await proc.wait()
            why = (await proc.stderr.read()).decode(errors="replace").strip().splitlines()
            raise self.unavailable(
                f"{self.title} ({self.python} -I {self.script}) exited with code "
                f"{proc.returncode}: {why[-1] if why else 'no message'}"
            )
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise EvalError(f"{self.title}: {answer['error']}")
        return answer

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request and its answer. A caller cancelled while it waits does not cut the
        exchange: the answer is read before this returns, so the next request (another run's,
        on a shared worker) never reads an answer that was not its own."""
        exchange = asyncio.ensure_future(self._exchange(request))
        try:
            return await asyncio.shield(exchange)
        except asyncio.CancelledError:
            await asyncio.wait({exchange})
            if not exchange.cancelled():
                exchange.exception()  # retrieved: the caller's cancellation is what goes on
            raise

    async def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None:
                raise self.unavailable(f"{self.title} is not running")
            proc.stdin.write((json.dumps(request) + "\n").encode())
            await proc.stdin.drain()
            return await self._read()
