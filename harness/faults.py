"""Crash points for tests and experiments: the process kills itself where a real crash hurts.

``LOOPBENCH_CRASH_AFTER_TOOL=<tool>``: SIGKILL after that tool's effect, before its result is
saved (the window an idempotency key covers). ``LOOPBENCH_CRASH_AFTER_TURN=<n>``: SIGKILL right
after turn n is saved. ``LOOPBENCH_CRASH_AFTER_EVENT=<n>``: SIGKILL right after this process
wrote its nth trace line (every trace boundary is a kill point).
``LOOPBENCH_CRASH_AFTER_TASK=<n>``: SIGKILL right after an eval saved its nth task's record.
Unset (the default), they do nothing.
"""

from __future__ import annotations

import os
import signal


def crash_point(variable: str, value: str) -> None:
    if os.environ.get(variable) == value:
        os.kill(os.getpid(), signal.SIGKILL)
