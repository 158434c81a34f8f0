"""The main process's side of the pipe to BFCL's checker (``evals/bfcl/checker.py``), which
runs under the BFCL virtualenv's interpreter: its data and its verdicts, one JSON line each
way."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from evals.errors import EvalError

ROOT = Path(__file__).resolve().parents[2]
CHECKER = Path(__file__).with_name("checker.py")
# Where `make bfcl` (and `make test`) put BFCL's virtualenv; BFCL_PYTHON names another.
DEFAULT_PYTHON = ROOT / ".venv-bfcl" / "bin" / "python"


class BfclUnavailable(EvalError):
    """BFCL's virtualenv is missing or its checker does not start."""


def bfcl_python() -> Path:
    return Path(os.environ.get("BFCL_PYTHON") or DEFAULT_PYTHON)


class Checker:
    """One checker process; requests are answered in order, one at a time."""

    def __init__(self, python: Path | None = None) -> None:
        self.python = python or bfcl_python()
        self.version: str | None = None
        self.sandbox: str | None = None  # what confines the checker, as it reported it
        self._folder: str | None = None  # its working folder, the only one it may write in
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Checker:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        if not self.python.exists():
            raise BfclUnavailable(
                f"BFCL's checker runs in its own virtualenv and {self.python} is missing: "
                "`make bfcl-venv` creates it (or set BFCL_PYTHON to a Python with bfcl-eval)."
            )
        # A folder of its own, its working folder and home: BFCL's code runs on what a model
        # asked for, and the checker confines itself to that folder before reading a request.
        self._folder = tempfile.mkdtemp(prefix="loopbench-bfcl-checker-")
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")},
            "HOME": self._folder,
            "TMPDIR": self._folder,
            # Where BFCL writes (its file locks, result and score folders); its data is read
            # from the package.
            "BFCL_PROJECT_ROOT": self._folder,
            "OPENAI_API_KEY": "unused-by-the-checker",
        }
        self._proc = await asyncio.create_subprocess_exec(
            str(self.python),
            "-I",
            str(CHECKER),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self._folder,
            env=env,
            limit=1 << 28,  # one line carries every item of the categories asked for
        )
        hello = await self._read()
        self.version = str(hello.get("bfcl_eval"))
        self.sandbox = str(hello.get("sandbox"))

    async def aclose(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            await proc.wait()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    async def _read(self) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        line = await proc.stdout.readline()
        if not line:
            await proc.wait()
            why = (await proc.stderr.read()).decode(errors="replace").strip().splitlines()
            raise BfclUnavailable(
                f"BFCL's checker ({self.python} -I {CHECKER}) exited with code "
                f"{proc.returncode}: {why[-1] if why else 'no message'}"
            )
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise EvalError(f"BFCL's checker: {answer['error']}")
        return answer

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request and its answer. A caller cancelled while it waits does not cut the
        exchange: the answer is read before this returns, so the next request (another run's,
        on a shared checker) never reads an answer that was not its own."""
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
                raise BfclUnavailable("BFCL's checker is not running")
            proc.stdin.write((json.dumps(request) + "\n").encode())
            await proc.stdin.drain()
            return await self._read()

    async def load(self, categories: list[str]) -> dict[str, Any]:
        """Every item of ``categories``, as BFCL's OpenAI handler would send it."""
        return await self.ask({"op": "load", "categories": categories})

    async def score(self, item_id: str, category: str, result: Any) -> dict[str, Any]:
        """BFCL's verdict on one model result: ``valid``, ``error_type``, ``errors``."""
        return await self.ask(
            {"op": "score", "id": item_id, "category": category, "result": result}
        )

    async def load_multi(self, categories: list[str]) -> dict[str, Any]:
        """Every entry of the multi-turn ``categories``: turns, tools, held-back tools."""
        return await self.ask({"op": "load_multi", "categories": categories})

    async def execute(self, entry_id: str, key: str, calls: list[dict[str, str]]) -> dict[str, Any]:
        """One step's calls (``{name: arguments JSON}`` each) run on the conversation ``key``'s
        backend instances: ``decoded``, ``results`` (text, one per call), ``states``."""
        return await self.ask({"op": "execute", "id": entry_id, "key": key, "calls": calls})

    async def forget(self, key: str) -> None:
        await self.ask({"op": "forget", "key": key})

    async def score_multi(self, entry_id: str, category: str, result: Any) -> dict[str, Any]:
        """BFCL's multi-turn verdict on every step's calls of every turn."""
        return await self.ask(
            {"op": "score_multi", "id": entry_id, "category": category, "result": result}
        )
