"""The one skeleton every eval's records go through, task runs and BFCL items alike.

Each run file being written is a :class:`RunFile`: its ``.partial`` starts with the records of
the run being resumed, and each job's record is appended and fsynced the moment the job writes
it, so a kill loses only the jobs in flight. :func:`drive` keeps ``concurrency`` jobs in flight
over every run file. A job that raises stops the eval, but only once the jobs in flight have
ended: their records are kept whole, what did not start stays for ``--resume``, and the first
error is raised. When every job has a record, each run file is written in its own order.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from evals.record import read_records
from evals.run.runfiles import durable_append, start_partial

Line = dict[str, Any]
# A job does its work and writes its record with the function it is given (once); what it does
# after writing (progress, a crash point) happens with the record already on disk.
Job = Callable[[Callable[[Line], None]], Awaitable[None]]


@dataclass
class RunFile:
    """``out`` being written: every record's key in the file's order, how a record's line gives
    its key, and the lines kept from the run being resumed."""

    out: Path
    order: list[Hashable]
    key: Callable[[Line], Hashable]
    kept: list[Line] = field(default_factory=list)
    written: int = 0
    finished_at: float | None = None  # monotonic time of its last record
    file: IO[str] | None = None

    @property
    def partial(self) -> Path:
        return self.out.with_name(self.out.name + ".partial")

    def write(self, line: Line) -> None:
        assert self.file is not None
        durable_append(self.file, line)
        self.written += 1
        self.finished_at = time.monotonic()

    def finish(self) -> None:
        """The run file: the partial's records in the file's order, however they finished."""
        rank = {key: i for i, key in enumerate(self.order)}
        lines = sorted(read_records(self.partial), key=lambda line: rank[self.key(line)])
        start_partial(self.partial, lines)
        os.replace(self.partial, self.out)


async def drive(
    jobs: Sequence[tuple[RunFile, Job]], files: Sequence[RunFile], concurrency: int
) -> list[Exception]:
    """Every job, ``concurrency`` in flight, each writing to its run file; the run files
    written when all have a record. Returns the errors the jobs raised (none: every run file
    is written; any: none is, and each ``.partial`` keeps every record written)."""
    slots = asyncio.Semaphore(concurrency)
    raised: list[Exception] = []

    async def bounded(to: RunFile, job: Job) -> None:
        async with slots:
            if raised:
                return  # the eval stops: what is not started stays for --resume
            try:
                await job(to.write)
            except Exception as exc:
                raised.append(exc)

    try:
        for f in files:
            start_partial(f.partial, f.kept)
            # A lone surrogate in a record goes out as its JSON escape (errors=...).
            f.file = open(f.partial, "a", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        await asyncio.gather(*(bounded(to, job) for to, job in jobs))
    finally:
        for f in files:
            if f.file is not None:
                f.file.close()
    if not raised:
        for f in files:
            f.finish()
    return raised
