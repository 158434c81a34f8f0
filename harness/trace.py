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
        if self.trace_path:
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)

    def checkpoint(self, state: RunState) -> None:
        if self.state_dir is not None:
            save(state, self.state_dir)

    def event(self, state: RunState, kind: str, **data: Any) -> None:
        if self.trace_path is None:
            return
        line = {"run_id": state.run_id, "type": kind, "time": round(time.time(), 6), **data}
        with open(self.trace_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")

    def progress(self, state: RunState, tool_name: str, label: str) -> None:
        self.event(state, "tool_progress", tool_name=tool_name, label=label)
        if self.on_progress is not None:
            self.on_progress(tool_name, label)
