"""The pipe to a helper process (``evals/pipe.py``), against a worker that misbehaves on purpose
(``tests/workers/stub.py``, on the project's own worker end): every failure of the worker is
the pipe's own error, the worker is stopped with everything it started, and nothing hangs."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

from evals.errors import EvalError
from evals.pipe import PipeFailed, PipeWorker

STUB = Path(__file__).with_name("workers") / "stub.py"


class Stub(PipeWorker):
    script = STUB
    title = "the stub worker"
    install_hint = "it is the test's own."
    abandon_grace_s = 0.5
    close_grace_s = 0.5

    def __init__(self, python: Path | None = None, flood: int = 0) -> None:
        super().__init__(python or Path(sys.executable))
        self.flood = flood

    def extra_env(self, folder: str) -> dict[str, str]:
        return {"STUB_STDERR_FLOOD": str(self.flood)}


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie child of ours counts as gone: it runs nothing.
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def _logged(worker: Stub, text: str) -> str:
    """The worker's log once ``text`` is in it (its stderr is drained as it comes)."""
    log = worker.stderr_log
    assert log is not None
    for _ in range(200):
        if text in log.read_text():
            break
        await asyncio.sleep(0.01)
    seen = log.read_text()
    assert text in seen
    return seen


async def test_text_that_is_no_valid_unicode_crosses_both_ways_and_the_worker_lives() -> None:
    """A lone surrogate (what ``"\\ud800"`` in a model's JSON decodes to) used to end the
    worker when its answer was printed; on an ASCII wire it comes back as it went."""
    async with Stub() as worker:
        assert (await worker.ask({"op": "echo", "value": "id \ud800 é"}))["echo"] == "id \ud800 é"
        assert (await worker.ask({"op": "echo", "value": 2}))["echo"] == 2
        assert worker.dead is None


async def test_what_a_library_prints_on_stdout_never_shifts_the_answers() -> None:
    async with Stub() as worker:
        assert (await worker.ask({"op": "noise"}))["echo"] == "after the noise"
        assert (await worker.ask({"op": "echo", "value": "next"}))["echo"] == "next"
        # the chatter is in the worker's log, not among the answers
        assert "a library's chatter" in await _logged(worker, "more chatter")


async def test_what_a_worker_prints_as_it_is_imported_lands_in_its_log() -> None:
    """The launcher takes the answers' channel before it loads the worker, so a library that
    prints at import (as bfcl-eval's and tau2's may) cannot be read as the first line."""
    async with Stub() as worker:
        assert worker.hello == {"ready": True, "stub": 1}
        assert (await worker.ask({"op": "echo", "value": 1}))["echo"] == 1
        log = await _logged(worker, "import chatter on descriptor 1")
        assert "chatter as the worker is imported" in log


async def test_a_request_the_worker_refuses_leaves_it_running() -> None:
    async with Stub() as worker:
        with pytest.raises(EvalError, match="KeyError") as refused:
            await worker.ask({"op": "fail"})
        assert not isinstance(refused.value, PipeFailed)
        assert (await worker.ask({"op": "echo", "value": 1}))["echo"] == 1


@pytest.mark.parametrize(
    ("op", "why"),
    [
        ("exit", "exited with code 3"),
        ("garbage", "not an answer"),
        ("stranger", "not asked"),
        ("lacking", "without a valid 'echo'"),
    ],
)
async def test_a_worker_that_dies_or_breaks_the_protocol_is_dead_and_says_why(
    op: str, why: str
) -> None:
    async with Stub() as worker:
        with pytest.raises(PipeFailed, match=why):
            await worker.ask_for({"op": op}, {"echo": str})
        assert worker.dead is not None and why in worker.dead
        # Every later request fails at once with the same reason, never a stale answer.
        with pytest.raises(PipeFailed, match="not running"):
            await worker.ask({"op": "echo", "value": 1})
        assert worker._proc is not None and worker._proc.returncode is not None


async def test_a_request_past_its_deadline_kills_the_worker_and_what_it_started(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    async with Stub() as worker:
        with pytest.raises(PipeFailed, match="did not answer a 'hang' request within 1 s"):
            await worker.ask({"op": "hang", "pid_file": str(pid_file)}, timeout_s=1)
        own, child = map(int, pid_file.read_text().split())
        assert _gone(own)
        for _ in range(500):  # the child is reparented; SIGKILL to the group reaches it
            if _gone(child):
                break
            await asyncio.sleep(0.01)
        assert _gone(child)


async def test_a_caller_that_gives_up_does_not_wait_and_a_stuck_worker_is_stopped(
    tmp_path: Path,
) -> None:
    """A tool's time limit cancels the call: the caller goes on at once; the worker, still
    busy after the grace, is killed, so nothing later queues behind it for ever."""
    async with Stub() as worker:
        hung = asyncio.create_task(worker.ask({"op": "hang", "pid_file": str(tmp_path / "p")}))
        await asyncio.sleep(0.3)
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        for _ in range(500):
            if worker.dead is not None:
                break
            await asyncio.sleep(0.01)
        assert worker.dead is not None and "busy with a 'hang' request" in worker.dead
    # A quick request given up on is not fatal: its answer is dropped when it comes.
    async with Stub() as worker:
        quick = asyncio.create_task(worker.ask({"op": "sleep", "seconds": 0.1}))
        await asyncio.sleep(0.02)
        quick.cancel()
        with pytest.raises(asyncio.CancelledError):
            await quick
        assert (await worker.ask({"op": "echo", "value": "mine"}))["echo"] == "mine"
        await asyncio.sleep(Stub.abandon_grace_s + 0.2)
        assert worker.dead is None


async def test_a_worker_that_floods_its_stderr_starts_and_keeps_a_bounded_log() -> None:
    """200 MB of stderr before its first line used to fill the parent's buffer and hang it."""
    async with Stub(flood=200 << 20) as worker:
        assert (await worker.ask({"op": "echo", "value": 1}))["echo"] == 1
        log = worker.stderr_log
        assert log is not None
        assert log.stat().st_size == worker.stderr_cap
        assert worker.stderr_bytes > 200 << 20


async def test_an_interpreter_that_cannot_run_is_the_pipes_error(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(stat.S_IRUSR)  # not executable
    with pytest.raises(PipeFailed, match="cannot start"):
        await Stub(python).start()
    python.chmod(stat.S_IRWXU)  # runs, and exits before its first line
    with pytest.raises(PipeFailed, match="exited with code 0"):
        await Stub(python).start()


async def test_closing_a_busy_worker_kills_it_within_the_grace(tmp_path: Path) -> None:
    worker = Stub()
    await worker.start()
    busy = asyncio.create_task(worker.ask({"op": "hang", "pid_file": str(tmp_path / "p")}))
    await asyncio.sleep(0.3)
    proc = worker._proc
    assert proc is not None
    await asyncio.wait_for(worker.aclose(), 5)
    assert proc.returncode is not None
    with pytest.raises(PipeFailed):
        await busy


async def test_a_request_given_up_while_queued_waits_its_turn_before_its_grace() -> None:
    """The worker answers in order: a request given up on while another is still being
    answered is not "stuck" until the worker is on it. (Its grace used to run from the moment
    it was given up, so a healthy worker busy a little longer with another request was
    killed.) A request given up before it was even written is simply never sent."""
    async with Stub() as worker:
        slow = asyncio.create_task(worker.ask({"op": "sleep", "seconds": 3 * Stub.abandon_grace_s}))
        while not worker._waiting:
            await asyncio.sleep(0.01)
        queued = asyncio.create_task(worker.ask({"op": "echo", "value": "queued"}))
        while len(worker._waiting) < 2:
            await asyncio.sleep(0.01)
        queued.cancel()
        unsent = asyncio.create_task(worker.ask({"op": "echo", "value": "never sent"}))
        unsent.cancel()  # before its first step: it never reaches the pipe
        for cancelled in (queued, unsent):
            with pytest.raises(asyncio.CancelledError):
                await cancelled
        assert (await slow)["slept"] == 3 * Stub.abandon_grace_s
        assert (await worker.ask({"op": "echo", "value": "after"}))["echo"] == "after"
        assert worker.dead is None
