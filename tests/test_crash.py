"""kill -9 of the harness, then resume: the run ends as if nothing had happened.

Real processes against the scripted provider over real HTTP; the process kills itself right
after writing its nth trace line (``LOOPBENCH_CRASH_AFTER_EVENT``), so every trace boundary is
a kill point.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.loop import SYSTEM_PROMPT, run_loop
from harness.persist import load, save
from harness.setup import Setup
from harness.state import new_run
from harness.tools import Tool, ToolContext, default_tools
from harness.trace import Recorder
from harness.workspace import SEED_FILES, Workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from tests.helpers import run_harness

# Each phase is one harness process; "resume --approve c2" is the person's approval.
PHASES: dict[str, list[list[str]]] = {
    "plan": [["run", "--scenario", "plan"]],
    "destructive": [["run", "--scenario", "destructive"], ["resume", "--approve", "c2"]],
}
# Trace lines each phase of an uncrashed run writes (checked against a real run below).
EVENTS = {"plan": [8], "destructive": [6, 4]}
KILL_POINTS = [
    (scenario, phase, event)
    for scenario, counts in EVENTS.items()
    for phase, count in enumerate(counts)
    for event in range(1, count + 1)
]


@dataclass
class Outcome:
    status: str
    turns: int
    tool_runs: int
    cost_usd: float
    answer: str | None
    deleted: set[str]


def _harness(
    argv: list[str], run_id: str | None, url: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    if argv[0] == "resume":
        assert run_id is not None
        argv = ["resume", run_id, *argv[1:]]
    return run_harness(*argv, "--json", url=url, cwd=cwd, env=env)


def _run_id(cwd: Path) -> str:
    (state_file,) = (cwd / "runs").glob("*.json")
    return state_file.stem


def _outcome(cwd: Path, run_id: str) -> Outcome:
    state = load(cwd / "runs", run_id)
    workspace = Path(state.meta["workspace"])
    left = {p.name for p in workspace.iterdir()}
    return Outcome(
        state.status,
        state.turns,
        state.tool_runs,
        state.cost_usd,
        state.answer,
        set(SEED_FILES) - left,
    )


def _trace_lines(cwd: Path, run_id: str) -> int:
    return len((cwd / "runs" / f"{run_id}.trace.jsonl").read_text().splitlines())


@pytest.fixture(scope="module")
def uncrashed(scripted_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Each scenario run without a crash; also checks how many trace lines each phase writes."""
    outcomes = {}
    for scenario, phases in PHASES.items():
        cwd = tmp_path_factory.mktemp(scenario)
        run_id = None
        counts = []
        for argv in phases:
            before = _trace_lines(cwd, run_id) if run_id else 0
            done = _harness(argv, run_id, scripted_url, cwd)
            assert done.returncode == 0, done.stderr
            run_id = run_id or _run_id(cwd)
            counts.append(_trace_lines(cwd, run_id) - before)
        assert counts == EVENTS[scenario]
        assert run_id is not None
        outcomes[scenario] = _outcome(cwd, run_id)
    assert outcomes["plan"].status == "completed" and outcomes["plan"].turns == 3
    assert outcomes["destructive"].deleted == {"access.log"}
    return outcomes


@pytest.mark.parametrize(("scenario", "phase", "event"), KILL_POINTS)
def test_kill_at_every_trace_boundary_then_resume(
    scripted_url: str,
    tmp_path: Path,
    uncrashed: dict[str, Outcome],
    scenario: str,
    phase: int,
    event: int,
) -> None:
    phases = PHASES[scenario]
    run_id = None
    for argv in phases[:phase]:
        assert _harness(argv, run_id, scripted_url, tmp_path).returncode == 0
        run_id = run_id or _run_id(tmp_path)
    crash = {"LOOPBENCH_CRASH_AFTER_EVENT": str(event)}
    killed = _harness(phases[phase], run_id, scripted_url, tmp_path, env=crash)
    assert killed.returncode == -signal.SIGKILL
    run_id = run_id or _run_id(tmp_path)
    # Go on from wherever the kill left the run, then do what the person still had to do.
    for argv in [["resume"], *phases[phase + 1 :]]:
        done = _harness(argv, run_id, scripted_url, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    assert _outcome(tmp_path, run_id) == uncrashed[scenario]


# A crash in the middle of a turn's parallel calls --------------------------------------------

SLOW_READ_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from harness.client import ProviderClient
    from harness.loop import SYSTEM_PROMPT, run_loop
    from harness.setup import Setup
    from harness.state import new_run
    from harness.trace import Recorder
    from harness.workspace import Workspace
    from tests.test_crash import logged_reads

    url, folder, run_id = sys.argv[1:]
    state = new_run("scripted:oracle", "Which file is the largest?", SYSTEM_PROMPT, run_id)

    async def main():
        async with ProviderClient(url) as client:
            tools = logged_reads(folder, hang_on="notes.txt")
            setup = Setup(tools, Workspace(folder + "/workspace"))
            await run_loop(state, client, setup, recorder=Recorder(folder + "/runs"))

    asyncio.run(main())
    """
)


def logged_reads(folder: str, hang_on: str | None = None) -> list[Tool]:
    """The catalogue with a read_file that logs each read, and can hang on one file."""
    inner = next(t for t in default_tools() if t.name == "read_file")

    async def read(args: dict[str, Any], ctx: ToolContext) -> str:
        with open(Path(folder) / "reads.log", "a") as log:
            log.write(f"{args['path']}\n")
        if args["path"] == hang_on:
            await asyncio.Event().wait()
        return await inner.run(args, ctx)

    others = [t for t in default_tools() if t.name != "read_file"]
    return [*others, Tool("read_file", inner.description, inner.parameters, read, True)]


def _wait_for(predicate: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _saved_results(state_file: Path) -> int:
    try:
        return len(json.loads(state_file.read_text())["tool_log"])
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


async def test_a_crash_during_a_slow_call_keeps_the_calls_that_finished(
    scripted_url: str, tmp_path: Path, workspace: Workspace
) -> None:
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_READ_PROCESS, scripted_url, str(tmp_path), "slowrun"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        # list_files, then reads of access.log and errors.log saved while notes.txt hangs.
        state_file = tmp_path / "runs" / "slowrun.json"
        _wait_for(lambda: _saved_results(state_file) == 3, "the two fast reads to be saved")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    state = load(tmp_path / "runs", "slowrun")
    async with ProviderClient(scripted_url) as client:
        await run_loop(state, client, Setup(logged_reads(str(tmp_path)), workspace))
    assert state.status == "completed" and state.answer is not None
    assert state.answer.startswith("errors.log is the largest file")
    reads = (tmp_path / "reads.log").read_text().splitlines()
    assert sorted(reads) == ["access.log", "errors.log", "notes.txt", "notes.txt"]
    tool_ids = [m["tool_call_id"] for m in state.messages if m["role"] == "tool"]
    assert tool_ids == ["c1", "c2", "c3", "c4"]  # call order, whatever order they finished in


# Wall time ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slow_url() -> Iterator[str]:
    with running_server(create_app(ScriptedBackend(latency_ms=200))) as url:
        yield url


def test_wall_time_before_a_kill_counts_toward_the_timeout(slow_url: str, tmp_path: Path) -> None:
    # A timeout that never fires before the kill, however busy the machine: the kill after
    # turn 2 is what ends the first process.
    run = ["run", "--scenario", "plan", "--timeout", "600", "--json"]
    killed = run_harness(*run, url=slow_url, cwd=tmp_path, env={"LOOPBENCH_CRASH_AFTER_TURN": "2"})
    assert killed.returncode == -signal.SIGKILL
    run_id = _run_id(tmp_path)
    saved = load(tmp_path / "runs", run_id)
    assert saved.wall_ms >= saved.model_ms >= 400  # two turns of at least 200 ms each
    # Give the run exactly the time it had spent when it was killed: nothing is left, so the
    # resumed run stops at once, without asking the model a third time.
    saved.meta["config"]["timeout_s"] = saved.wall_ms / 1000
    save(saved, tmp_path / "runs")
    resumed = json.loads(run_harness("resume", run_id, "--json", url=slow_url, cwd=tmp_path).stdout)
    assert resumed["status"] == "interrupted" and resumed["interruption"]["type"] == "timeout"
    assert resumed["turns"] == 2


async def test_harness_time_takes_parallel_tools_as_wall_time(
    scripted_url: str, workspace: Workspace
) -> None:
    barrier = asyncio.Barrier(3)

    async def read_together(args: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.wait_for(barrier.wait(), timeout=10)
        await asyncio.sleep(0.1)  # the work each read does, side by side with the others
        return (ctx.workspace.root / args["path"]).read_text()

    tools = [t for t in default_tools() if t.name != "read_file"]
    tools.append(Tool("read_file", "read", {"type": "object"}, read_together, read_only=True))
    state = new_run("scripted:oracle", "Which file is the largest?", system=SYSTEM_PROMPT)
    async with ProviderClient(scripted_url) as client:
        await run_loop(state, client, Setup(tools, workspace), LoopConfig(), Recorder())
    assert state.status == "completed"
    assert state.tool_ms >= 300  # three reads of 100 ms each, side by side
    assert state.tool_wall_ms < state.tool_ms
    assert 0 <= state.harness_ms < state.wall_ms
