"""tau2's real worker (``evals/tau2/worker.py``) behind a fault injector, for tests of what a
broken worker does to an eval. Started as any worker is, in its place
(``python -I evals/workerside.py tau2_faults.py FAULT MARK WORKER``): the fault is armed until
the file MARK exists (each fault that fires writes it, so a worker started after it runs
clean), and the worker's requests are served by WORKER, loaded as the launcher loads it.

Faults: ``hang`` (the first tool call never returns), ``die`` (the worker exits at its first
tool call), ``noise`` (every tool call prints on stdout, by Python and on descriptor 1),
``flood`` (200 MB on stderr before the worker starts), ``empty-judge`` (the evaluator answers
with nothing), ``gold-fails`` (the task's gold actions cannot be given, once).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import workerside  # the launcher itself (it names itself so for such a worker)

fault, mark, worker = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
with Path(mark.parent / "pids").open("a") as pids:
    pids.write(f"{os.getpid()}\n")


def armed() -> bool:
    return not mark.exists()


def fired() -> None:
    mark.write_text(fault)


if fault == "flood":
    block = b"y" * 65535 + b"\n"
    for _ in range((200 << 20) // len(block)):
        os.write(2, block)

if fault in ("hang", "die", "noise"):
    from tau2.environment.environment import Environment

    theirs = Environment.get_response

    def get_response(self, message):  # type: ignore[no-untyped-def]
        if fault == "noise":
            print("chatter from a library")
            os.write(1, b"chatter on descriptor 1\n")
        elif armed():
            fired()
            if fault == "die":
                os._exit(7)
            while True:
                time.sleep(1)
        return theirs(self, message)

    Environment.get_response = get_response

sys.argv = [str(worker)]  # as the launcher sets it for the worker it loads
real = workerside.load(worker, "loopbench_tau2_worker")
if fault == "empty-judge":
    conversations = real.CONVERSATIONS

    def evaluate(key: str, termination: str) -> dict[str, object]:
        conversations.close(key)
        return {}

    conversations.evaluate = evaluate
if fault == "gold-fails":
    conversations = real.CONVERSATIONS
    theirs_gold = conversations.gold

    def gold(key: str) -> dict[str, object]:
        if armed():
            fired()
            raise RuntimeError("the gold could not be read")
        return dict(theirs_gold(key))

    conversations.gold = gold
answer, hello, close = real.answer, real.hello, real.close
