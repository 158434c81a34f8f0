"""What a task runs on, as one seam: every committed task runs on the environment that holds
it, and a new environment is one object and one registry line (the run, the record, the
scorer and the strategies follow)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals import environments
from evals.environments import Reading, environment_of, registry
from evals.environments.base import scripted_calls
from evals.errors import EvalError
from evals.record import OtherData, WorkspaceData, read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.scoring.evidence import offerable_tools, stated
from evals.studies import strategies
from evals.tasks import Task, TaskSet, load_tasks
from harness.setup import Setup
from harness.state import RunState
from harness.tools import Tool, ToolContext
from harness.workspace import create_workspace
from serve_local.inprocess import running_server
from tests.fake_provider import answer, calls, server_app, turn_of

TASKS = Path(__file__).parent.parent / "evals" / "tasks"


def test_every_committed_task_runs_where_its_family_says() -> None:
    for path in sorted(TASKS.glob("*.json")):
        for task in load_tasks(path).tasks:
            expected = "database" if path.name.startswith("sql-") else "workspace"
            assert environment_of(task).name == expected, (path.name, task.id)
    # A name no environment offers is data, not a call.
    assert stated('{"name": "read_clock"}') == '{"name": "read_clock"}'


async def _read_clock(args: dict[str, Any], ctx: ToolContext) -> str:
    return "It is 09:41."


CLOCK = Tool(
    "read_clock",
    "The time of day.",
    {"type": "object", "properties": {}, "additionalProperties": False},
    _read_clock,
    read_only=True,
)
INTRO = "You read the wall clock for the user."


class _OpenedClock:
    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        yield Setup([CLOCK], create_workspace(folder, files={}), intro=INTRO)

    def record(self, task: Task, state: RunState | None) -> OtherData:
        return OtherData.model_validate({"name": "clock", "reading": "wall clock"})


class ClockEnvironment:
    """A third environment, as a test would add one."""

    name = "clock"
    tool_names = frozenset({CLOCK.name})
    default_policy = "all-helps"

    def __init__(self) -> None:
        self.opened: list[list[str]] = []

    def holds(self, task: Task) -> bool:
        return task.kind == "clock"

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _OpenedClock:
        self.opened.append([t.id for t in tasks])
        return _OpenedClock()

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        workspace = create_workspace(scratch / task.id, files={})
        state, results = await scripted_calls(
            task.question, [("read_clock", {})], [CLOCK], workspace
        )
        return Reading(state, [], {"read_clock": results[0]}, results=results[0])


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ClockEnvironment:
    env = ClockEnvironment()
    monkeypatch.setattr(registry, "ENVIRONMENTS", (env, *registry.ENVIRONMENTS))
    return env


def _clock_tasks(tmp_path: Path) -> Path:
    checks: list[dict[str, Any]] = [{"kind": "contains", "value": "09:41"}]
    tasks = [
        {"id": "clock", "question": "What time is it?", "kind": "clock", "checks": checks},
        {"id": "files", "question": "How many files are there?", "checks": checks},
    ]
    path = tmp_path / "clock.json"
    path.write_text(json.dumps({"name": "clock", "tasks": tasks}))
    return path


async def test_a_new_environment_is_one_object_and_one_registry_line(
    clock: ClockEnvironment, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        offered = [t["function"]["name"] for t in body["tools"]]
        if turn_of(request) == 0 and "read_clock" in offered:
            reply = calls(("c1", "read_clock", "{}"))
        else:
            reply = answer("It is 09:41." if "read_clock" in offered else "Three files.")
        return httpx.Response(200, json=reply)

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            base_url=url, model="fake", tasks=_clock_tasks(tmp_path), out=tmp_path / "run.jsonl"
        )
        records = {r.task_id: r for r in read_runs(await run_eval(settings, echo=lambda _: None))}
    assert clock.opened == [["clock"]]  # opened once, for the tasks it holds
    # The run: its tools offered, its intro in the system prompt, its record field filled.
    clock_requests = [b for b in seen if b["messages"][1]["content"] == "What time is it?"]
    assert {t["function"]["name"] for b in clock_requests for t in b["tools"]} == {"read_clock"}
    assert INTRO in clock_requests[0]["messages"][0]["content"]
    assert records["clock"].tools_called == ["read_clock"] and records["clock"].correct
    assert records["clock"].environment == OtherData.model_validate(
        {"name": "clock", "reading": "wall clock"}
    )
    assert environments.environment_of_record(records["clock"]) is clock
    # The other task ran on the workspace, as before.
    assert records["files"].environment == WorkspaceData() and not records["files"].correct
    # The scorer: a call of its tool written as text is a call, not an answer.
    assert "read_clock" in offerable_tools()
    assert stated('{"name": "read_clock"}').strip() == ""
    # The strategies answer from its reading: copying the clock's result is credited.
    taskset = TaskSet(name="clock", tasks=[load_tasks(_clock_tasks(tmp_path)).tasks[0]])
    reading = await environments.environment_of(taskset.tasks[0]).read_all(
        taskset.tasks[0], tmp_path / "read"
    )
    assert reading.results == "It is 09:41."
    assert [s.strategy for s in strategies.attempts(taskset.tasks[0], reading)]


async def test_a_workflow_on_an_environment_it_cannot_gather_from_says_so(
    clock: ClockEnvironment, tmp_path: Path
) -> None:
    """The workflows ask gather(), one line per environment, never the environment's name:
    one that has no line there is a clear error naming it, before any model call."""
    asked: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content))
        return httpx.Response(200, json=answer("09:41"))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            base_url=url, model="fake", tasks=_clock_tasks(tmp_path), out=tmp_path / "w.jsonl",
            solver="chain",
        )  # fmt: skip
        with pytest.raises(EvalError, match="gather evidence on a task's 'clock' environment"):
            await run_eval(settings, echo=lambda _: None)
    assert asked == []
