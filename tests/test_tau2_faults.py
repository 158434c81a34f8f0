"""tau2's real worker, broken on purpose (``tests/workers/tau2_faults.py`` in front of it, as
``TAU2_PYTHON``), under the eval's own path: a run the worker fails is an error record, the
other tasks go on (on a worker started anew), the eval exits 0, nothing is left running; a
model's text that is no valid Unicode never reaches tau2; Ctrl-C ends the eval."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evals.conversation import STOP
from evals.record import RunRecord
from evals.tau2.bridge import tau2_python
from tests.fake_provider import answer, by_turn, calls, fake_client
from tests.helpers import run_tau2_task
from tests.test_tau2 import _eval, _tau2_tasks, needs_tau2

pytestmark = needs_tau2

FAULTS = Path(__file__).with_name("workers") / "tau2_faults.py"
ROOT = Path(__file__).resolve().parent.parent


def _faulty(folder: Path, fault: str) -> Path:
    """An interpreter that runs tau2's worker behind ``fault`` (armed until it fires once)."""
    folder.mkdir(parents=True, exist_ok=True)
    python = folder / "python"
    python.write_text(
        # started as "python -I LAUNCHER WORKER": the launcher runs the injector in the worker's
        # place, and the injector the worker
        f'#!/bin/sh\nexec {tau2_python()} -I "$2" {FAULTS} {fault} {folder / "fired"} "$3"\n'
    )
    python.chmod(0o755)
    return python


def _all_gone(folder: Path) -> bool:
    """Every worker the injector started has exited (and is no zombie of ours)."""
    for pid in map(int, (folder / "pids").read_text().split()):
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
            return False
    return True


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An airline and a retail task the oracle solves; each user greets, then stops."""
    return _tau2_tasks(
        tmp_path_factory.mktemp("tau2-two"), [("airline", "2"), ("retail", "5")],
        ["Hello, I need help.", STOP],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("fault", "flags", "broken", "why"),
    [
        ("die", (), 1, "exited with code 7"),
        ("hang", ("--tool-timeout", "2"), 1, "did not answer within 2 s"),
        ("hang", ("--task-timeout", "3"), 1, "with a 'call' request 2 s after its caller gave up"),
        ("empty-judge", (), 2, "without a valid 'reward'"),
        ("noise", (), 0, ""),
        ("flood", (), 0, ""),
        ("gold-fails", (), 1, "could not give the task's gold"),
    ],
)
def test_a_run_the_worker_fails_is_an_error_and_the_eval_goes_on(
    two_tasks: Path, scripted_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    fault: str, flags: tuple[str, ...], broken: int, why: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("TAU2_PYTHON", str(_faulty(tmp_path / "worker", fault)))
    records: list[RunRecord] = _eval(two_tasks, scripted_url, tmp_path, "--agent", "oracle", *flags)
    assert [r.task_id for r in records] == ["airline-2", "retail-5"]
    errors = [r for r in records if r.status == "error"]
    assert len(errors) == broken, [(r.status, r.error) for r in records]
    for record in errors:
        assert why in (record.error or ""), record.error
        assert record.environment.reward is None  # never judged: never a 0
    for record in records[broken:]:  # the rest ran, on a worker started anew where one died
        assert (record.status, record.environment.reward) == ("completed", 1.0)
    assert _all_gone(tmp_path / "worker")


def _agent_on_airline_2(
    folder: Path, replies: list[tuple[int, dict[str, Any]]]
) -> tuple[Any, dict[str, str]]:
    """airline-2 with a user that greets, then stops, and an agent that sends ``replies``: the
    task run, and each tool result by call id."""
    from evals.tasks import load_tasks

    tasks = load_tasks(_tau2_tasks(folder, [("airline", "2")], ["Hello.", STOP]))
    ran, _ = run_tau2_task(tasks.tasks[0], fake_client(by_turn(replies)), folder)
    results = {m["tool_call_id"]: m["content"] for m in ran.state.messages if m["role"] == "tool"}
    return ran, results


def test_a_lone_surrogate_in_a_call_is_refused_and_tau2s_worker_goes_on(tmp_path: Path) -> None:
    """``{"user_id": "\\ud800"}`` used to come back inside tau2's error text and end the
    worker as it printed it (the eval exited 1, every conversation on it lost); now the call is
    refused as invalid arguments before any tool runs, and the conversation is judged."""
    ran, results = _agent_on_airline_2(
        tmp_path,
        [
            (200, calls(("c1", "get_user_details", '{"user_id": "\\ud800"}'))),
            (200, calls(("c2", "get_user_details", '{"user_id": "nobody_here"}'))),
            (200, answer("I could not find you.")),
        ],
    )  # fmt: skip
    assert "not text" in results["c1"] and "U+D800" in results["c1"]
    assert "not found" in results["c2"].lower()  # tau2 answered the next call
    refused = [r for r in ran.state.tool_log if r.call_id == "c1"]
    assert [(r.ran, r.invalid) for r in refused] == [(False, True)]
    assert ran.talk is not None and ran.talk.end == "user_stop"
    assert ran.verdicts == {"tau2": 0.0} and ran.machinery is None


def test_calculate_refuses_a_power_too_large_to_compute(tmp_path: Path) -> None:
    """tau2's ``calculate`` evaluates ``9**9**9**9`` with Python's eval, for ever; the worker
    refuses what does not finish within its limit as tau2 refuses what it cannot compute (an
    error the agent reads), and a calculation tau2 can do gives tau2's own answer."""
    ran, results = _agent_on_airline_2(
        tmp_path,
        [
            (200, calls(("c1", "calculate", '{"expression": "9**9**9**9"}'))),
            (200, calls(("c2", "calculate", '{"expression": "(120 + 80) * 1.5"}'))),
            # A part that makes a complex number first hides nothing from the limit.
            (200, calls(("c3", "calculate", '{"expression": "(-8)**0.5 + 9**9**9**9"}'))),
            # Arguments go to tau2 as its runner sends them (unchecked against the schema):
            # an expression that is not text is refused, never evaluated.
            (200, calls(("c4", "calculate", '{"expression": ["9", "*", "*", "9"]}'))),
            (200, calls(("c5", "calculate", '{"expression": 5}'))),
            # Nested past any tool's need: refused before tau2, whose judge would recurse
            # through it replaying the call and fail the run as an error.
            (200, calls(("c6", "calculate", '{"expression": ' + "[" * 500 + "]" * 500 + "}"))),
            (200, answer("Done.")),
        ],
    )  # fmt: skip
    assert results["c4"].startswith("Error: ") and results["c5"].startswith("Error: ")
    assert "nest more than 32 levels" in results["c6"]
    assert "too long to compute" in results["c1"] and "too long to compute" in results["c3"]
    assert results["c2"] == "300.0"
    assert ran.machinery is None and ran.verdicts == {"tau2": 0.0}


def test_ctrl_c_ends_an_eval_whose_worker_hangs_and_keeps_what_finished(
    two_tasks: Path, scripted_url: str, tmp_path: Path
) -> None:
    """SIGINT to the eval's process alone used to change nothing while a tau2 call hung (the
    pipe waited for its answer, shielded); now the eval ends, its worker killed, the records
    written so far kept for --resume."""
    folder = tmp_path / "worker"
    out = tmp_path / "run.jsonl"
    eval_ = subprocess.Popen(
        [sys.executable, "-m", "evals", "run", "--base-url", scripted_url, "--tasks",
         str(two_tasks), "--out", str(out), "--agent", "oracle", "--tool-timeout", "300"],
        cwd=tmp_path, env={**os.environ, "TAU2_PYTHON": str(_faulty(folder, "hang")),
                           "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # As a terminal's foreground job: a background one (make test from a script without
        # job control) inherits SIGINT ignored, and Python would keep ignoring it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        while not (folder / "fired").exists():  # the first tool call is hanging now
            assert eval_.poll() is None, eval_.communicate()[0]
            time.sleep(0.05)
        eval_.send_signal(signal.SIGINT)
        said, _ = eval_.communicate(timeout=30)  # raises, and fails the test, if it hangs
    finally:
        if eval_.poll() is None:
            eval_.kill()
    assert eval_.returncode == 130, said
    assert out.with_name(out.name + ".partial").exists() and not out.exists()
    assert _all_gone(folder)


def test_a_run_never_judged_leaves_no_environment_open_in_the_worker(tmp_path: Path) -> None:
    """A conversation whose user model fails is never judged; its τ² environment (airline's
    database alone is 7 MB) used to stay open in the worker for the whole eval. Each run's
    environment is now closed when the run ends, whatever ended it."""
    import asyncio

    import httpx

    from evals.run.servers import Serving
    from evals.run.settings import EvalSettings, eval_loop
    from evals.run.taskrun import run_task
    from evals.tasks import load_tasks
    from evals.tau2.environment import Tau2Environment
    from harness.client import RetryPolicy
    from tests.fake_provider import fake_client

    def down(_: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": {"message": "down"}})

    tasks = load_tasks(_tau2_tasks(tmp_path, [("airline", "2"), ("retail", "5")], None))

    async def held_after_runs() -> tuple[list[str], list[str | None]]:
        opened = Tau2Environment().open(tasks.tasks, None, tmp_path)
        try:
            settings = EvalSettings(
                serving=Serving(base_url="http://unused.invalid/v1"), loop=eval_loop()
            )
            client = fake_client(down)
            client.retry = RetryPolicy(max_retries=0)  # down is down: no backoff to wait out
            errors = []
            for n, task in enumerate(tasks.tasks):
                ran = await run_task(
                    task, settings, "m", f"r{n}", tmp_path, tmp_path / "keep", client, opened
                )
                errors.append(ran.machinery)
            assert opened._tau2 is not None
            return await opened._tau2.held(), errors
        finally:
            await opened.aclose()

    held, errors = asyncio.run(held_after_runs())
    assert all(e is not None and "user model failed" in e for e in errors), errors
    assert held == []
