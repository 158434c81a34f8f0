"""The wall clock as an environment: its tasks carry the clock's time zone (``clock: {zone:
...}``), a check kind of its own (``{kind: clock_read, times: N}``), its records keep the zone
and how often the clock was read, a workflow gathers its evidence by reading the clock, and a
run file's summary says how often it was read, and ``loopbench generate --source clock``
writes questions about it; it judges no claim of an answer. Nothing
here is loopbench's own code: it reaches loopbench through the entry point its
``pyproject.toml`` declares."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.environments.base import Figures, Gathering, Reading, scripted_calls
from evals.record import Data, RunRecord
from evals.tasks import Evidence, Task, TaskFields, TaskSet, write_taskset
from evals.tasks.sources import Source
from harness.setup import Setup
from harness.state import RunState
from harness.tools import Tool, ToolContext
from harness.workspace import create_workspace

TIMES = {"UTC": "09:41", "Asia/Ho_Chi_Minh": "16:41"}
INTRO = "You read the wall clock for the user."


class ClockFields(TaskFields):
    """What a clock task names: the zone its clock shows."""

    key = "clock"
    zone: Literal["UTC", "Asia/Ho_Chi_Minh"]


class ClockData(Data):
    """What a clock task's record keeps: the zone, and how many times the clock was read."""

    name: Literal["clock"] = "clock"
    zone: str
    reads: int | None = None


class ClockRead(BaseModel):
    """A check of the clock's own: the run read the clock, at least ``times`` times."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["clock_read"]
    times: int = Field(default=1, ge=1)

    def passes(self, run: Evidence) -> bool:
        return len(run.results("read_clock")) >= self.times


def clock_tool(zone: str) -> Tool:
    async def read(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"It is {TIMES[zone]}."

    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    return Tool("read_clock", "The time of day.", parameters, read, read_only=True)


def _zone(task: Task) -> str:
    fields = task.fields_of(ClockFields)
    assert fields is not None
    return fields.zone


def _reads(records: Sequence[RunRecord]) -> dict[str, Any] | None:
    """How many of the clock's runs read it, and how often in all."""
    if not records:
        return None
    reads = [r.environment.reads for r in records if isinstance(r.environment, ClockData)]
    return {
        "runs": len(records),
        "read": sum(bool(n) for n in reads),
        "reads": sum(n or 0 for n in reads),
    }


def _reads_markdown(figures: dict[str, Any]) -> str:
    return (
        f"{figures['read']} of {figures['runs']} runs read the clock ({figures['reads']} reads).\n"
    )


ZONES = ("UTC", "Asia/Ho_Chi_Minh")


def write_tasks(seed: int, n: int, out: Path, split: str | None) -> TaskSet:
    """``n`` questions about the clock, one zone each (in turn from ``seed``), written to
    ``out``: what ``loopbench generate --source clock`` writes."""
    tasks = [
        {
            "id": f"clock-{seed + i}",
            "question": "What time is it?",
            "clock": {"zone": ZONES[(seed + i) % len(ZONES)]},
            "checks": [{"kind": "clock_read", "times": 1}],
        }
        for i in range(n)
    ]
    taskset = TaskSet.model_validate({"name": f"clock-s{seed}-n{n}", "tasks": tasks})
    write_taskset(taskset, out)
    return taskset


class _Opened:
    @asynccontextmanager
    async def setup(self, task: Task, folder: Path) -> AsyncIterator[Setup]:
        yield Setup([clock_tool(_zone(task))], create_workspace(folder, files={}), intro=INTRO)

    def record(self, task: Task, state: RunState | None) -> ClockData:
        reads = None if state is None else sum(r.name == "read_clock" for r in state.tool_log)
        return ClockData(zone=_zone(task), reads=reads)


class ClockEnvironment:
    name = "clock"
    tool_names = frozenset({"read_clock"})
    default_preset = "no-helpers"
    data = ClockData
    task_fields = (ClockFields,)
    check_kinds = (ClockRead,)
    texts = ()
    figures = Figures("clock", "How often the clock was read", _reads, _reads_markdown)
    sources = (
        Source("clock", "questions about the wall clock", {"dev": range(0, 10)}, write_tasks),
    )

    def holds(self, task: Task) -> bool:
        return task.fields_of(ClockFields) is not None

    def open(self, tasks: Sequence[Task], db: str | None, scratch: Path) -> _Opened:
        return _Opened()

    async def read_all(self, task: Task, scratch: Path) -> Reading:
        workspace = create_workspace(scratch / task.id, files={})
        tool = clock_tool(_zone(task))
        state, results = await scripted_calls(
            task.question, [("read_clock", {})], [tool], workspace
        )
        return Reading(state, [], {"read_clock": results[0]}, results=results[0])

    async def gather(self, steps: Gathering, route: bool = False, repair: bool = False) -> None:
        """A workflow reads the clock once."""
        await steps.run_tools([("read_clock", {})])
