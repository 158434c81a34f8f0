"""One rule for a run's time limit: it counts the run's own work (the model's time as its
server reports it, the tools' time), not time queued or slowed by other processes. A limit
the wall clock reaches while the work has not is the machinery's: an eval records an error,
and --resume runs the task again."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import TurnRecord, new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from serve_local.inprocess import running_server
from tests.fake_provider import answer, calls, fake_client, server_app, turn_of


def timed(body: dict[str, Any], predicted_ms: float) -> dict[str, Any]:
    """A reply with the server's own timings, as llama.cpp's servers and ours send them."""
    return {**body, "timings": {"prompt_n": 10, "prompt_ms": 1.0, "predicted_n": 5,
                                "predicted_ms": predicted_ms}}  # fmt: skip


READ = calls(("c1", "read_file", '{"path": "notes.txt"}'))


def test_work_counts_the_servers_own_time_and_the_tools() -> None:
    state = new_run("m", "q")
    timed_turn = {"prompt_ms": 10.0, "predicted_ms": 40.0}
    state.turn_records = [  # one turn the server timed, one it did not
        TurnRecord(1, 10, 5, latency_ms=900.0, finish_reason="stop", cost_usd=0.0,
                   timings=timed_turn),
        TurnRecord(2, 10, 5, latency_ms=300.0, finish_reason="stop", cost_usd=0.0),
    ]  # fmt: skip
    assert state.work_ms == 10.0 + 40.0 + 300.0


async def test_work_past_the_limit_is_the_models_timeout(tmp_path: Path) -> None:
    """Replies the server says took 400 ms each, returned at once: the third turn is not
    asked, and the run is the model's timeout, not the machine's."""
    handler = lambda request: httpx.Response(  # noqa: E731
        200, content=json.dumps(timed(READ, 400.0)).encode()
    )
    state = new_run("m", "What does notes.txt say?")
    async with fake_client(handler) as client:
        await run_loop(
            state, client, Setup(default_tools(), create_workspace(tmp_path)),
            LoopConfig(timeout_s=0.5, max_turns=10),
        )  # fmt: skip
    assert (state.status, state.interruption) == ("interrupted", {"type": "timeout"})
    assert state.turns == 2 and not state.wall_limit_hit


async def test_a_server_without_timings_is_judged_by_the_wall_clock(tmp_path: Path) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, content=json.dumps(answer("late")).encode())

    state = new_run("m", "What does notes.txt say?")
    async with fake_client(handler) as client:  # type: ignore[arg-type]
        await run_loop(
            state, client, Setup(default_tools(), create_workspace(tmp_path)),
            LoopConfig(timeout_s=0.3),
        )  # fmt: skip
    assert state.status == "interrupted" and state.interruption is not None
    assert state.interruption["type"] == "timeout" and not state.wall_limit_hit


def test_a_limit_reached_by_wall_time_only_is_an_error_and_reruns(tmp_path: Path) -> None:
    """The first reply comes fast and timed; the second is held back (a busy machine) past
    the limit while the work so far is a few milliseconds: the record is an error, and a
    resume, with the machine free again, runs the task and records its answer."""
    busy = threading.Event()
    busy.set()

    def handler(request: httpx.Request) -> httpx.Response:
        if turn_of(request) == 0:
            return httpx.Response(200, content=json.dumps(timed(READ, 2.0)).encode())
        if busy.is_set():
            time.sleep(1.5)  # in the server's own thread: the eval's clock keeps running
        reply = timed(answer("notes.txt says to rotate the logs."), 2.0)
        return httpx.Response(200, content=json.dumps(reply).encode())

    tasks = tmp_path / "one.json"
    check = [{"kind": "contains", "value": "rotate"}]
    task = {"id": "notes", "question": "What does notes.txt say?", "checks": check}
    tasks.write_text(json.dumps({"name": "one", "tasks": [task]}))
    out = tmp_path / "run.jsonl"
    with running_server(server_app(handler, "fake")) as url:
        settings = EvalSettings(
            serving=Serving(base_url=url, model="fake"),
            tasks=tasks,
            out=out,
            loop=eval_loop(timeout_s=0.5),
        )
        asyncio.run(run_eval(settings, echo=lambda _: None))
        (record,) = read_runs(out)
        assert record.status == "error" and record.error is not None
        assert "the machine was busy" in record.error
        busy.clear()
        asyncio.run(run_eval(replace(settings, resume=out), echo=lambda _: None))
    (record,) = read_runs(out)
    assert record.status == "completed" and record.correct


OVERFLOW = {
    "error": {
        "message": "This model's context is 4096 tokens; the prompt has 4122.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def test_one_rule_for_a_prompt_over_the_context(tmp_path: Path) -> None:
    """A task whose first prompt does not fit cannot be posed on this server: an error. A
    conversation the model's own turns grew past the context is the model's loss: failed,
    counted wrong."""

    def first_too_long(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=json.dumps(OVERFLOW).encode())

    def grows_too_long(request: httpx.Request) -> httpx.Response:
        if turn_of(request) == 0:
            return httpx.Response(200, content=json.dumps(READ).encode())
        return httpx.Response(400, content=json.dumps(OVERFLOW).encode())

    tasks = tmp_path / "one.json"
    task = {"id": "notes", "question": "What does notes.txt say?",
            "checks": [{"kind": "contains", "value": "rotate"}]}  # fmt: skip
    tasks.write_text(json.dumps({"name": "one", "tasks": [task]}))
    found = {}
    for name, handler in (("first", first_too_long), ("grown", grows_too_long)):
        with running_server(server_app(handler, "fake")) as url:
            out = tmp_path / f"{name}.jsonl"
            settings = EvalSettings(
                serving=Serving(base_url=url, model="fake"), tasks=tasks, out=out
            )
            asyncio.run(run_eval(settings, echo=lambda _: None))
        (found[name],) = read_runs(out)
    assert found["first"].status == "error" and "4122" in str(found["first"].error)
    assert found["grown"].status == "failed" and not found["grown"].correct
