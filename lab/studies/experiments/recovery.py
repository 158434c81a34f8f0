"""Stopping and starting again: crash and resume, cancellation during a slow tool."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

from harness.cancel import CancelToken
from harness.persist import load
from harness.trace import Recorder
from lab.studies.experiments.common import Env, Result, drive


async def exp_crash(env: Env) -> Result:
    folder = env.scratch / "crash"
    base = {**os.environ, "LLM_BASE_URL": env.url}
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--scenario",
        "plan",
        "--json",
        "--state-dir",
        str(folder),
    ]
    child = subprocess.run(
        cmd,
        env={**base, "LOOPBENCH_CRASH_AFTER_TURN": "2"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    run_id = next(p.stem for p in folder.glob("*.json"))
    restored = load(folder, run_id)
    before = [r.name for r in restored.tool_log]
    restored_row = {
        "run": "restored from disk",
        "turns": restored.turns,
        "cost": round(restored.cost_usd, 6),
        "messages": len(restored.messages),
        "status": restored.status,
        "tool runs so far": before,
    }
    resumed = subprocess.run(
        [sys.executable, "-m", "harness", "resume", run_id, "--json", "--state-dir", str(folder)],
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    final = load(folder, run_id)
    clean, _ = await drive(env, "scripted:plan")
    rows: list[dict[str, Any]] = [
        {
            "run": f"process killed after turn 2 (exit {child.returncode})",
            "turns": "",
            "cost": "",
            "messages": "",
            "status": "",
            "tool runs so far": "",
        },
        restored_row,
        {
            "run": f"resumed in a new process (exit {resumed.returncode})",
            "turns": final.turns,
            "cost": round(final.cost_usd, 6),
            "messages": len(final.messages),
            "status": final.status,
            "tool runs so far": [r.name for r in final.tool_log],
        },
        {
            "run": "uncrashed run",
            "turns": clean.turns,
            "cost": round(clean.cost_usd, 6),
            "messages": len(clean.messages),
            "status": clean.status,
            "tool runs so far": [r.name for r in clean.tool_log],
        },
    ]
    return Result(
        "crash",
        "9. Crash and resume",
        "A run killed with SIGKILL resumes from its "
        "state file: no turn is paid twice, no tool runs twice.",
        rows,
        {
            "killed_by_signal": child.returncode == -signal.SIGKILL,
            "same_cost": final.cost_usd == clean.cost_usd,
            "each_tool_once": [r.name for r in final.tool_log] == ["list_files", "read_file"],
        },
    )


async def _stop_at(env: Env, seconds: float | None, wired: bool) -> dict[str, Any]:
    token = CancelToken()
    lines: list[str] = []
    recorder = Recorder(on_progress=lambda _tool, label: lines.append(label))
    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.perf_counter())
        token.cancel("user pressed Stop")

    if seconds is not None:
        asyncio.get_running_loop().call_later(seconds, press)
    start = time.perf_counter()
    s, _ = await drive(
        env, "scripted:slow", recorder=recorder, cancel=token, cancel_reaches_tools=wired
    )
    end = time.perf_counter()
    label = (
        "no stop"
        if seconds is None
        else f"stop at {seconds} s, token {'in the tool' if wired else 'only in the HTTP call'}"
    )
    return {
        "run": label,
        "ran ms": round((end - start) * 1000),
        "stopped ms after the click": round((end - pressed[0]) * 1000, 2) if pressed else "",
        "status": s.status,
        "progress lines": len(lines),
        "reason": (s.interruption or {}).get("reason", ""),
    }


async def exp_cancel(env: Env) -> Result:
    rows = [
        await _stop_at(env, None, True),
        await _stop_at(env, 1.2, True),
        await _stop_at(env, 1.2, False),
    ]
    return Result(
        "cancel",
        "10. Cancellation during a 3-second tool",
        "A Stop that reaches the "
        "tool ends the run within milliseconds; one wired only into the HTTP call "
        "waits for the tool to finish.",
        rows,
        {
            "wired_stop_ms": rows[1]["stopped ms after the click"],
            "unwired_stop_ms": rows[2]["stopped ms after the click"],
        },
    )
