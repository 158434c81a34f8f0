"""The run's recorder: checkpoints to the state file and one JSONL trace line per event.

Every trace line carries ``run_id``, ``type`` (``turn | tool_start | tool_progress |
tool_result | approval_required | run_stopped``) and ``time`` (Unix seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.faults import crash_point
from harness.persist import save
from harness.state import RunState

EVENT_TYPES = (
    "turn",
    "tool_start",
    "tool_progress",
    "tool_result",
    "approval_required",
    "run_stopped",
)


class Recorder:
    def __init__(
        self,
        state_dir: str | Path | None = None,
        trace_path: str | Path | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> None:
        self.state_dir = Path(state_dir) if state_dir else None
        self.trace_path = Path(trace_path) if trace_path else None
        self.on_progress = on_progress
        self._clock: float | None = None  # when wall time was last charged to the run
        self._events = 0
        if self.trace_path:
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)

    def start_clock(self) -> None:
        """From now until ``stop_clock``, every checkpoint charges the time since the last."""
        self._clock = time.perf_counter()

    def stop_clock(self) -> None:
        self._clock = None

    def checkpoint(self, state: RunState) -> None:
        # Wall time is saved with the state, so a run killed at any point keeps what it spent
        # (and a --timeout counts it across resumes).
        if self._clock is not None:
            now = time.perf_counter()
            state.wall_ms += (now - self._clock) * 1000
            self._clock = now
        if self.state_dir is not None:
            save(state, self.state_dir)

    def event(self, state: RunState, kind: str, **data: Any) -> None:
        if self.trace_path is None:
            return
        line = {"run_id": state.run_id, "type": kind, "time": round(time.time(), 6), **data}
        # A lone surrogate a model wrote goes out as its JSON escape, as JSON would write it.
        with open(self.trace_path, "a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._events += 1
        crash_point("LOOPBENCH_CRASH_AFTER_EVENT", str(self._events))

    def progress(self, state: RunState, tool_name: str, label: str) -> None:
        self.event(state, "tool_progress", tool_name=tool_name, label=label)
        if self.on_progress is not None:
            self.on_progress(tool_name, label)
