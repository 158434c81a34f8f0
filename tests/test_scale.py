"""Evals at scale: task runs in flight at once, requests spread over several servers each
bounded to its own concurrency, several models in one command; the same records as one task
run at a time. Real uvicorn servers; concurrency observed on the server side, not timed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evals.errors import EvalError
from evals.record import RunRecord, kept_at, read_records
from evals.report.summary import summarize_run_file
from evals.run.discovery import Server, server_software
from evals.run.runner import EvalSettings, run_eval, run_evals
from evals.run.servers import ServerPool, Serving, servers_for
from evals.run.settings import eval_loop
from evals.tasks import load_tasks
from serve_local.app import SERVER, create_app
from serve_local.backends.base import Completion
from serve_local.backends.scripted import ScriptedBackend
from serve_local.errors import InvalidRequest
from serve_local.inprocess import running_server
from serve_local.schema import ChatRequest
from tests.test_eval_resume import evals

TASK_IDS = [t.id for t in load_tasks().tasks]
# What a record says about the model's work; the rest (times, ids, paths) may differ.
SAME = ("task_id", "epoch", "status", "turns", "tool_runs", "prompt_tokens",
        "completion_tokens", "cost_usd", "answer", "correct", "tools_called", "stop_reason",
        "turn_finish_reasons", "checks")  # fmt: skip
SAME_SPEC = ("model", "preset")


def work(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**{k: r[k] for k in SAME}, **{k: r["spec"][k] for k in SAME_SPEC}} for r in records]


class Gate(ScriptedBackend):
    """A scripted backend that holds each request until ``expect`` are in flight together
    (or ``patience_s`` passes: a client that never gets there is then seen as ``peak``)."""

    def __init__(self, expect: int, latency_ms: float = 20, patience_s: float = 5) -> None:
        super().__init__(latency_ms=latency_ms)
        self.expect = expect
        self.patience_s = patience_s
        self.in_flight = self.peak = self.requests = 0
        self._full: asyncio.Event | None = None

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        self._full = self._full or asyncio.Event()
        self.in_flight += 1
        self.requests += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.expect:
            self._full.set()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self.patience_s)
            return await super().complete(request, cancel)
        finally:
            self.in_flight -= 1


@pytest.fixture
def slow_url() -> Iterator[str]:
    with running_server(create_app(ScriptedBackend(latency_ms=100))) as url:
        yield url


def oracle(url: str, out: Path, **extra: Any) -> EvalSettings:
    """The oracle's eval at ``url``; where the requests go (``concurrency``, ``per_server``,
    ``more_base_urls``) among ``extra``."""
    where = {k: extra.pop(k) for k in ("concurrency", "per_server", "more_base_urls") if k in extra}
    return EvalSettings(serving=Serving(url, model="scripted:oracle", **where), out=out, **extra)


async def test_concurrent_eval_gives_the_records_of_a_serial_one(
    slow_url: str, tmp_path: Path
) -> None:
    serial = await run_eval(oracle(slow_url, tmp_path / "c1.jsonl", epochs=2), echo=print)
    lines: list[str] = []
    concurrent = await run_eval(
        oracle(slow_url, tmp_path / "c6.jsonl", epochs=2, concurrency=6),
        echo=lines.append,
        summarize=summarize_run_file,
    )
    assert work(read_records(concurrent)) == work(read_records(serial))
    assert [r["task_id"] for r in read_records(concurrent)] == TASK_IDS * 2  # task order
    finished = [line for line in lines if line.startswith("[")]
    assert [line.split()[0] for line in finished] == [f"[{i}/12]" for i in range(1, 13)]
    assert all("elapsed, eta " in line for line in finished)
    summary = json.loads((tmp_path / "c6.summary.json").read_text())
    assert summary["elapsed_ms"] > 0 and "elapsed=" in lines[-2]


async def test_task_runs_are_in_flight_together_up_to_the_concurrency(tmp_path: Path) -> None:
    backend = Gate(expect=4)
    with running_server(create_app(backend)) as url:
        out = await run_eval(oracle(url, tmp_path / "c4.jsonl", concurrency=4), echo=print)
    assert backend.peak == 4  # never more than asked, and really that many
    assert all(r["correct"] for r in read_records(out))


async def test_one_at_a_time_by_default(tmp_path: Path) -> None:
    backend = Gate(expect=2, patience_s=0.05)
    with running_server(create_app(backend)) as url:
        await run_eval(oracle(url, tmp_path / "c1.jsonl"), echo=print)
    assert backend.peak == 1


async def test_requests_spread_over_servers_each_bounded(tmp_path: Path) -> None:
    first, second = Gate(expect=2), Gate(expect=2)
    with running_server(create_app(first)) as a, running_server(create_app(second)) as b:
        settings = oracle(a, tmp_path / "two.jsonl", more_base_urls=(b,), concurrency=4)
        records = read_records(await run_eval(settings, echo=print))
    assert (first.peak, second.peak) == (2, 2)  # 4 in flight, 2 per server
    assert first.requests and second.requests
    assert {u for r in records for u in r["answered_by"]} == {a, b}
    assert all(r["server_software"] == SERVER for r in records)
    assert {s["base_url"] for s in records[0]["spec"]["servers"]} == {a, b}
    assert all(r["correct"] for r in records)


async def test_max_connections_bounds_each_server(tmp_path: Path) -> None:
    backend = Gate(expect=2, patience_s=0.05)
    with running_server(create_app(backend)) as url:
        settings = oracle(url, tmp_path / "m.jsonl", concurrency=6, per_server=1)
        await run_eval(settings, echo=print)
    assert backend.peak == 1


async def test_several_models_one_queue_one_run_file_each(slow_url: str, tmp_path: Path) -> None:
    models = ("scripted:oracle", "scripted:plan")
    settings = [
        EvalSettings(
            serving=Serving(base_url=slow_url, model=m, concurrency=4),
            out=tmp_path / f"{m}.jsonl",
        )
        for m in models
    ]
    lines: list[str] = []
    outs = await run_evals(settings, echo=lines.append)
    assert [read_records(o)[0]["spec"]["model"] for o in outs] == list(models)
    assert [len(read_records(o)) for o in outs] == [6, 6]
    assert sum(line.startswith("[") for line in lines) == 12
    # Each model's records are its own eval's, the same as run alone.
    alone = await run_eval(oracle(slow_url, tmp_path / "alone.jsonl"), echo=print)
    assert work(read_records(outs[0])) == work(read_records(alone))


def test_cli_models_writes_one_run_file_each_and_one_comparison(
    scripted_url: str, tmp_path: Path
) -> None:
    proc = evals(
        "--models",
        "scripted:oracle,scripted:runaway",
        "--concurrency",
        "4",
        "--max-turns",
        "3",
        "--compare",
        str(tmp_path / "cmp.md"),
        url=scripted_url,
        cwd=tmp_path,
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    runs = sorted((tmp_path / "results" / "runs").glob("*.jsonl"))
    assert [read_records(r)[0]["spec"]["model"] for r in runs] == [
        "scripted:oracle",
        "scripted:runaway",
    ]
    table = (tmp_path / "cmp.md").read_text()
    assert "scripted:oracle@scripted" in table and "scripted:runaway@scripted" in table
    assert "scripted:runaway@scripted" in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "a", "--models", "a,b"], "--model or --models, not both"),
        (["--models", "a,b", "--out", "x.jsonl"], "use them with one model"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--max-connections", "0"], "--max-connections must be at least 1"),
    ],
)
def test_cli_refuses_what_cannot_run(
    scripted_url: str, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = evals(*args, url=scripted_url, cwd=tmp_path)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1 and message in stderr
    assert not (tmp_path / "results").exists()  # nothing written


def test_a_model_no_server_serves_is_an_error_naming_what_they_serve() -> None:
    servers = [
        Server("http://a/v1", [{"id": "qwen"}], "x"),
        Server("http://b/v1", [{"id": "smol"}], "x"),
    ]
    assert servers_for(servers, "smol") == [servers[1]]
    with pytest.raises(EvalError, match="no server serves 'llama'; they serve: qwen, smol"):
        servers_for(servers, "llama")


async def test_servers_that_disagree_on_weights_are_refused(tmp_path: Path) -> None:
    class Weights(ScriptedBackend):
        def __init__(self, sha: str) -> None:
            super().__init__()
            self.sha = sha

        def models(self) -> list[dict[str, Any]]:
            return [{**m, "sha256": self.sha} for m in super().models()]

    with (
        running_server(create_app(Weights("aa"))) as a,
        running_server(create_app(Weights("bb"))) as b,
    ):
        settings = oracle(a, tmp_path / "w.jsonl", more_base_urls=(b,))
        with pytest.raises(EvalError, match="serve different weights"):
            await run_eval(settings, echo=print)
    assert not (tmp_path / "w.jsonl").exists()


def test_a_killed_concurrent_eval_resumes_to_the_serial_records(
    slow_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "killed.jsonl"
    killed = evals(
        "--model", "scripted:oracle", "--concurrency", "3", "--out", str(out),
        "--preset", "no-helpers",  # the in-process eval's default, which it is compared with
        url=slow_url, cwd=tmp_path, env={"LOOPBENCH_CRASH_AFTER_TASK": "3"},
    )  # fmt: skip
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    partial = out.with_name(out.name + ".partial")
    assert len(read_records(partial)) == 3 and not out.exists()  # only what was in flight lost
    resumed = evals("--resume", str(partial), "--concurrency", "3", url=slow_url, cwd=tmp_path)
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    serial = asyncio.run(run_eval(oracle(slow_url, tmp_path / "serial.jsonl"), echo=print))
    assert work(read_records(out)) == work(read_records(serial))


def test_server_software_is_named_from_what_the_server_says() -> None:
    def app(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/props":
            return httpx.Response(200, json={"build_info": "b1-abc"})
        if request.url.path == "/version":
            return httpx.Response(200, json={"version": "0.11.0"})
        return httpx.Response(404)

    transport = httpx.MockTransport(app)
    with httpx.Client(transport=transport) as client:
        assert server_software("http://h/v1", {"server": SERVER}, client) == SERVER
        llama = {"id": "m", "owned_by": "llamacpp"}
        assert server_software("http://h/v1", llama, client) == "llama.cpp llama-server b1-abc"
        vllm = {"id": "m", "owned_by": "vllm"}
        assert server_software("http://h/v1", vllm, client) == "vllm 0.11.0"
        assert server_software("http://h/v1", {"id": "m"}, client) == "unknown"


async def test_the_pool_prefers_the_server_of_the_previous_turn() -> None:
    a, b = Server("a", [], "x", limit=2), Server("b", [], "x", limit=2)
    pool = ServerPool()
    async with (
        pool.slot([a, b], prefer=b) as first,
        pool.slot([a, b], prefer=b) as second,
        pool.slot([a, b]) as third,
    ):
        assert (first, second, third) == (b, b, a)  # b full: the least busy
    assert (a.busy, b.busy) == (0, 0)


def test_records_carry_server_fields_in_json(scripted_url: str, tmp_path: Path) -> None:
    out = asyncio.run(run_eval(oracle(scripted_url, tmp_path / "o.jsonl"), echo=print))
    record = json.loads(out.read_text().splitlines()[0])
    assert record["answered_by"] == [scripted_url]
    assert record["spec"]["servers"] == [{"base_url": scripted_url, "software": SERVER}]


# A task run that fails or waits must not cost the others theirs --------------------------------


class Held(ScriptedBackend):
    """The scripted provider, holding each request ``holds`` picks until ``release`` is set
    (or ``patience_s`` passes: a run that never gets there is then seen in ``released_by``)."""

    def __init__(self, holds: Callable[[ChatRequest], bool], patience_s: float = 20) -> None:
        super().__init__()
        self.holds, self.patience_s = holds, patience_s
        self.release = threading.Event()
        self.released_by: list[str] = []

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        if self.holds(request):
            released = await asyncio.to_thread(self.release.wait, self.patience_s)
            self.released_by.append("release" if released else "patience")
        return await super().complete(request, cancel)


def asks(request: ChatRequest, question: str) -> bool:
    return any(m.role == "user" and m.text() == question for m in request.messages)


class Boom(RuntimeError):
    pass


async def test_a_task_run_that_raises_leaves_every_other_record_whole(tmp_path: Path) -> None:
    # Four task runs in flight; the first one's is the only request answered until its record
    # is written, and the hook after that record raises, so the other three are in flight.
    first = TASK_IDS[0]
    backend = Held(lambda r: not asks(r, load_tasks().tasks[0].question))

    def fail_first(record: RunRecord) -> None:
        if record.task_id == first:
            backend.release.set()
            raise Boom("the hook after the first task failed")

    out = tmp_path / "boom.jsonl"
    with running_server(create_app(backend)) as url:
        with pytest.raises(Boom):
            await run_eval(oracle(url, out, concurrency=4), echo=print, after_task=fail_first)
        partial = out.with_name(out.name + ".partial")
        kept = {r["task_id"]: r for r in read_records(partial)}
        # The three in flight finished and were recorded; the two not started never were.
        assert set(kept) == set(TASK_IDS[:4]) and all(r["correct"] for r in kept.values())
        assert not out.exists()  # the eval stopped: no run file looks complete
        resumed = await run_eval(oracle(url, out, concurrency=4, resume=partial), echo=print)
        alone = await run_eval(oracle(url, tmp_path / "alone.jsonl"), echo=print)
    assert set(backend.released_by) == {"release"}
    records = read_records(resumed)
    resumed_ids = {r["task_id"]: r["run_id"] for r in records}
    assert {t: resumed_ids[t] for t in kept} == {t: r["run_id"] for t, r in kept.items()}
    assert work(records) == work(read_records(alone))


class Refuse(ScriptedBackend):
    """The scripted provider, refusing (HTTP 400) every turn of one question."""

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        if any(m.role == "user" and m.text() == self.question for m in request.messages):
            raise InvalidRequest("this question is refused here")
        return await super().complete(request, cancel)


@dataclass
class ModelsHold:
    """What the server saw: requests for a turn, a refusal, and how each held GET ended."""

    posts: int  # turns that release a held GET of /v1/models
    patience_s: float
    refused: bool = False
    turns: int = 0
    released_by: list[str] = field(default_factory=list)
    more: asyncio.Event | None = None  # set at each turn's request


class HoldModels:
    """ASGI middleware: once a request was refused, each GET of /v1/models waits until
    ``hold.posts`` requests for a turn have arrived after it (or ``patience_s`` passes)."""

    def __init__(self, app: ASGIApp, hold: ModelsHold) -> None:
        self.app, self.hold = app, hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hold = self.hold
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hold.more = hold.more or asyncio.Event()
        if scope["method"] == "POST":
            hold.turns += 1
            hold.more.set()
            hold.more = asyncio.Event()
        elif scope["path"] == "/v1/models" and hold.refused:
            hold.released_by.append(await self._wait())

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 400:
                hold.refused = True
            await send(message)

        await self.app(scope, receive, noting)

    async def _wait(self) -> str:
        hold = self.hold
        until = hold.turns + hold.posts
        loop = asyncio.get_running_loop()
        deadline = loop.time() + hold.patience_s
        while hold.turns < until:
            assert hold.more is not None
            try:
                await asyncio.wait_for(hold.more.wait(), deadline - loop.time())
            except TimeoutError:
                return "patience"
        return "progress"


async def test_asking_whether_the_server_lives_does_not_stop_the_other_runs(
    tmp_path: Path,
) -> None:
    # The first task's turns are refused, so its run fails and the runner asks the server for
    # its models. That request is held until four turns of other runs have arrived: more than
    # the three other runs can have had in flight before it, so only runs going on while the
    # question is open release it.
    hold = ModelsHold(posts=4, patience_s=12)
    app = create_app(Refuse(load_tasks().tasks[0].question))
    app.add_middleware(HoldModels, hold=hold)
    with running_server(app) as url:
        out = await run_eval(oracle(url, tmp_path / "r.jsonl", concurrency=4), echo=print)
    records = read_records(out)
    assert hold.released_by == ["progress"]
    assert [r["status"] for r in records] == ["failed"] + ["completed"] * 5  # none "not run"
    assert all(r["correct"] for r in records[1:])


async def test_a_task_timeout_ends_a_wait_for_a_server_and_the_wait_is_not_wall_time(
    tmp_path: Path,
) -> None:
    # One server taking one request at a time; the plan eval's first request holds it until
    # an oracle task run, which has a timeout, has been recorded: that run can only end by
    # its timeout while it waits for the server.
    backend = Held(lambda r: r.model == "scripted:plan")
    first_oracle: list[RunRecord] = []

    def after(record: RunRecord) -> None:
        if record.spec.model == "scripted:oracle" and not first_oracle:
            first_oracle.append(record)
            backend.release.set()

    with running_server(create_app(backend)) as url:
        common = {"base_url": url, "concurrency": 2, "per_server": 1}
        settings = [
            EvalSettings(
                serving=Serving(model="scripted:plan", **common), out=tmp_path / "plan.jsonl"
            ),
            EvalSettings(
                serving=Serving(model="scripted:oracle", **common),
                out=tmp_path / "oracle.jsonl",
                loop=eval_loop(timeout_s=1.0),
            ),
        ]  # fmt: skip
        await run_evals(settings, echo=print, after_task=after)
    assert set(backend.released_by) == {"release"}
    (waited,) = first_oracle
    assert (waited.status, waited.interruption) == ("interrupted", {"type": "timeout"})
    assert waited.queue_ms and waited.queue_ms > 0
    # The wait is recorded apart: the run's state counts it, the record's wall time does not.
    trace_file = kept_at(tmp_path / "oracle.jsonl", str(waited.trace_path))
    state = json.loads((trace_file.parent / f"{waited.run_id}.json").read_text())
    assert waited.wall_ms + waited.queue_ms == pytest.approx(state["wall_ms"], abs=0.2)
