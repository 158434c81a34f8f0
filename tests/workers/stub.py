"""A helper process for tests of the pipe (``evals/pipe.py``), started as tau2's worker and
BFCL's checker are (``python -I evals/workerside.py stub.py``), answering requests that
misbehave on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import workerside  # the launcher itself (it names itself so for such a worker)

channel = workerside.channel
# What a library prints as it is imported, through Python and on descriptor 1: the launcher has
# pointed both at stderr before loading any worker.
print("chatter as the worker is imported")
os.write(1, b"import chatter on descriptor 1\n")


def answer(request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "echo":
        return {"echo": request["value"]}
    if op == "noise":  # a library that prints, through Python and through descriptor 1
        print("a library's chatter")
        os.write(1, b"more chatter on descriptor 1\n")
        return {"echo": "after the noise"}
    if op == "sleep":
        time.sleep(float(request["seconds"]))
        return {"slept": request["seconds"]}
    if op == "hang":  # a child of its own, then never an answer
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(request["pid_file"]).write_text(f"{os.getpid()} {child.pid}")
        while True:
            time.sleep(1)
    if op == "exit":
        os._exit(3)
    if op == "garbage":  # on the answers' own descriptor: what a broken worker would write
        channel.write("this is no answer\n")
        channel.flush()
        return {"echo": "late"}
    if op == "stranger":
        channel.write('{"pipe_id": 999999, "echo": "not asked"}\n')
        channel.flush()
        return {"echo": "late"}
    if op == "fail":
        raise KeyError("a key it lacks")
    if op == "lacking":
        return {}
    raise ValueError(f"unknown op {op!r}")


def hello() -> dict[str, Any]:
    flood = int(os.environ.get("STUB_STDERR_FLOOD", "0"))
    if flood:  # before the first line: a worker that logs a lot as it starts
        block = b"x" * 65535 + b"\n"
        for _ in range(flood // len(block)):
            os.write(2, block)
        sys.stderr.write("the last line of the flood\n")
    return {"stub": 1}
