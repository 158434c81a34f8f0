"""A helper process in a virtualenv of its own, behind a pipe, supervised.

BFCL's checker and tau2's worker each pin libraries the project's environment must not hold,
so each runs by path under its own interpreter, started by the worker's end of the pipe
(``python -I evals/workerside.py WORKER``: nothing of the project on its path), in an empty
folder of its own that is its working folder and home, in a process group of its own (a
Ctrl-C meant for the eval is the eval's to handle).

The wire (``evals/workerside.py`` is the worker's end): one JSON request per line on its stdin,
each with a number (``pipe_id``) its answer must echo; one answer per line on a descriptor kept
for answers (the worker's ``sys.stdout`` goes to its stderr, so a stray print cannot shift the
answers); ASCII-only JSON both ways, so no text a model wrote can fail to encode on either
side. The first line out says the worker is ready.

Supervision: the worker's stderr is drained as it comes into a bounded log file. Every request
has a deadline; a worker that misses one, exits, writes a line that is no answer, or answers a
request that was not asked is killed (its whole process group) and marked dead, and every
request waiting on it fails with the pipe's own error (``unavailable``): the machinery's fault,
never a result. A caller that gives up on its request (a tool's time limit, Ctrl-C) does not
wait for the answer, which is dropped when it comes; a worker still busy with it a moment later
is stuck, and is killed. Whoever owns the worker starts a new one for the next task.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from evals.errors import EvalError
from evals.workerside import ID

# What starts every worker (the worker's end of the pipe).
LAUNCHER = Path(__file__).with_name("workerside.py")


class PipeFailed(EvalError):
    """The helper process cannot run, died, hung or broke the protocol: the machinery failed.
    Each helper's own subclass says which helper and how to install it."""


class PipeWorker:
    """One helper process; it answers requests in order, one at a time.

    A subclass names its script, what it is called in messages, the error raised when it cannot
    run (with the command that installs it) and the environment it adds.
    """

    script: Path
    title: str
    install_hint: str
    unavailable: type[PipeFailed] = PipeFailed
    # One answer line's bound (a line may carry every item of a benchmark's categories).
    line_limit = 1 << 28
    # A request's deadline unless the call names its own; the first line's (imports) too.
    timeout_s = 300.0
    # How long a worker may go on with a request its caller gave up on before it is killed.
    abandon_grace_s = 2.0
    # How long aclose waits for the worker to exit on its own before killing it.
    close_grace_s = 2.0
    # The worker's stderr kept in its log file; the rest is counted, not kept.
    stderr_cap = 1 << 20

    def __init__(self, python: Path) -> None:
        self.python = python
        self.hello: dict[str, Any] = {}
        self.folder: str | None = None  # its working folder, the only one it may write in
        self.dead: str | None = None  # why the worker is no longer usable, once it is not
        self._proc: asyncio.subprocess.Process | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._given_up: set[int] = set()
        self._ids = itertools.count(1)
        self._write_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._drain: asyncio.Task[None] | None = None
        self._group_killed = False
        self._stderr_tail = b""
        self.stderr_bytes = 0

    def extra_env(self, folder: str) -> dict[str, str]:
        return {}

    @property
    def stderr_log(self) -> Path | None:
        return Path(self.folder) / "stderr.log" if self.folder else None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def _argv(self) -> list[str]:
        """The worker's command line: its interpreter, isolated, running the launcher on it."""
        return [str(self.python), "-I", str(LAUNCHER), str(self.script)]

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
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._argv(),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.folder, env=env,
                limit=self.line_limit, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:  # not executable, not a program, gone
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            raise self.unavailable(
                f"{self.title} cannot start: {self.python}: {exc.strerror or exc}. "
                f"{self.install_hint}"
            ) from exc
        self._drain = asyncio.create_task(self._drain_stderr(), name=f"pipe: {self.title}")
        self._tasks.append(self._drain)
        try:
            self.hello = await asyncio.wait_for(self._first_line(), self.timeout_s)
        except TimeoutError:
            await self._kill(f"did not say it was ready within {self.timeout_s:g} s")
        except BaseException:
            await self._kill("was given up on while it started")
            await self.aclose()
            raise
        if self.dead is not None:
            why = self.dead
            await self.aclose()
            raise self.unavailable(f"{self.title} ({' '.join(self._argv())}) {why}")
        self._tasks.append(asyncio.create_task(self._read_answers(), name=f"pipe: {self.title}"))

    async def _first_line(self) -> dict[str, Any]:
        """The worker's ready line. What comes before it (printed as the interpreter started, by
        a ``.pth`` file of its site-packages, before the launcher took stdout over) is not an
        answer and is passed over."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, OSError) as exc:
                await self._kill(f"wrote a first line it could not deliver ({exc})")
                return {}
            if not line:
                await self._exited()
                return {}
            try:
                hello = json.loads(line)
            except ValueError:
                continue
            if isinstance(hello, dict) and hello.get("ready") is True:
                return hello

    async def _exited(self) -> None:
        proc = self._proc
        assert proc is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), self.close_grace_s)
        if self._drain is not None:  # its last words, once the process has written them
            await asyncio.wait({self._drain}, timeout=self.close_grace_s)
        code = proc.returncode
        await self._kill(f"exited with code {code}: {self.last_words()}")

    def last_words(self) -> str:
        """The last line the worker wrote on its stderr, or 'no message'."""
        lines = self._stderr_tail.decode(errors="replace").strip().splitlines()
        return lines[-1][:500] if lines else "no message"

    async def _drain_stderr(self) -> None:
        """Everything the worker writes on stderr, read as it comes (a worker whose stderr
        fills would block): the first ``stderr_cap`` bytes into its log file, the last few
        kept for messages, the rest counted."""
        proc = self._proc
        assert proc is not None and proc.stderr is not None and self.stderr_log is not None
        with open(self.stderr_log, "wb") as log:
            while chunk := await proc.stderr.read(1 << 16):
                room = self.stderr_cap - self.stderr_bytes
                if room > 0:
                    log.write(chunk[:room])
                    log.flush()
                self.stderr_bytes += len(chunk)
                self._stderr_tail = (self._stderr_tail + chunk)[-4096:]

    async def _read_answers(self) -> None:
        """Each answer line handed to the request it names; anything else kills the worker."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, OSError) as exc:  # a line over the bound, a broken pipe
                await self._kill(f"wrote an answer it could not deliver ({exc})")
                return
            if not line:
                await self._exited()
                return
            try:
                answer = json.loads(line)
                ident = answer.pop(ID)
            except (ValueError, AttributeError, KeyError, TypeError):
                await self._kill(f"wrote a line that is not an answer: {line[:80]!r}")
                return
            future = self._waiting.pop(ident, None) if isinstance(ident, int) else None
            if future is None:
                await self._kill(f"answered a request that was not asked (id {ident!r})")
                return
            self._given_up.discard(ident)  # an answer nobody waits for any more is dropped
            if not future.done():
                future.set_result(answer)

    async def _kill(self, why: str) -> None:
        """The worker dead for ``why``: its process group killed and reaped, then every
        waiting request failed (so none fails while the worker still runs)."""
        if self.dead is None:
            self.dead = why
        proc = self._proc
        if proc is not None:
            # The group too, whether or not its leader is still there (what the worker started
            # goes with it); once only: later its number may be another group's.
            if not self._group_killed:
                self._group_killed = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for ident, future in list(self._waiting.items()):
            if not future.done():
                future.set_exception(self.unavailable(f"{self.title} {why}"))
                if ident in self._given_up:
                    future.exception()  # nobody waits on it any more
        self._waiting.clear()

    async def aclose(self) -> None:
        """Stop the worker: its stdin closed, a moment to exit, then killed."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), self.close_grace_s)
        await self._kill(self.dead or "was closed")
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._proc = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    async def ask(self, request: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """One request and its answer, within ``timeout_s`` (the worker's default when None)
        of the worker starting on it (it answers in order: the requests before it first).
        Raises ``unavailable`` when the worker cannot answer (then it is dead), or an
        :class:`EvalError` with the worker's own message when it refused the request."""
        proc = self._proc
        if self.dead is not None or proc is None or proc.stdin is None:
            raise self.unavailable(f"{self.title} is not running: {self.dead or 'not started'}")
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        line = json.dumps({**request, ID: ident}, ensure_ascii=True) + "\n"
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            async with self._write_lock:  # a caller gone before this sent nothing: no answer due
                self._waiting[ident] = future
                proc.stdin.write(line.encode("ascii"))
                await proc.stdin.drain()
        except asyncio.CancelledError:
            if ident in self._waiting:  # (partly) written: an answer may come, and is dropped
                self._give_up(ident, future, str(request.get("op")))
            raise
        except (OSError, RuntimeError) as exc:  # its stdin is gone: it died
            await self._kill(f"stopped reading requests ({exc.__class__.__name__}: {exc})")
            if future.done() and not future.cancelled():
                future.exception()  # failed by the kill; this error says it
            raise self.unavailable(f"{self.title} {self.dead}") from exc
        try:
            await self._turn_of(ident)
            answer = await asyncio.wait_for(asyncio.shield(future), limit)
        except TimeoutError:
            await self._kill(f"did not answer a {request.get('op')!r} request within {limit:g} s")
            raise self.unavailable(f"{self.title} {self.dead}") from None
        except asyncio.CancelledError:
            self._give_up(ident, future, str(request.get("op")))
            raise
        if "error" in answer:
            raise EvalError(f"{self.title}: {answer['error']}")
        return answer

    async def _turn_of(self, ident: int) -> None:
        """Until the worker has answered every request sent before ``ident`` (it answers in
        order, so then it is on ``ident``'s): a deadline counts from there, not from a queue."""
        earlier = [f for i, f in list(self._waiting.items()) if i < ident]
        if earlier:
            await asyncio.wait(earlier)

    async def ask_for(
        self,
        request: dict[str, Any],
        shape: Mapping[str, type | tuple[type, ...]],
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """:meth:`ask`, the answer checked to hold each key of ``shape`` with a value of its
        type: an answer that lacks one breaks the protocol, and the worker is dead."""
        answer = await self.ask(request, timeout_s)
        for key, kind in shape.items():
            if not isinstance(answer.get(key), kind):
                await self._kill(
                    f"answered a {request.get('op')!r} request without a valid {key!r}"
                )
                raise self.unavailable(f"{self.title} {self.dead}")
        return answer

    def _give_up(self, ident: int, future: asyncio.Future[dict[str, Any]], op: str) -> None:
        """The caller of request ``ident`` stopped waiting: its answer is dropped when it comes;
        if it has not come within the grace of the worker starting on it, the worker is stuck
        on it and is killed."""
        if future.done():
            self._waiting.pop(ident, None)
            if not future.cancelled():
                future.exception()
            return
        self._given_up.add(ident)

        async def watch() -> None:
            await self._turn_of(ident)
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(future), self.abandon_grace_s)
            if not future.done():
                await self._kill(
                    f"was still busy with a {op!r} request {self.abandon_grace_s:g} s after its "
                    "caller gave up on it (a time limit, an interrupt), and was stopped"
                )

        self._tasks.append(asyncio.create_task(watch(), name=f"pipe: {self.title}"))
