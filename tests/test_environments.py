"""What a task runs on, as one seam: every committed task runs on the environment that holds
it, and a new environment is one module and one registry line: its task fields, its record
data, its gathering rule, its tools, the scorer and the strategies follow. The new environment
here is the wall clock of examples/plugins/loopbench-clock, a package of its own (which
tests/test_plugins.py installs through its entry points); here it enters the registry as one
line would add it."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import httpx
import pytest
from pydantic import Field

from evals import registry
from evals.errors import EvalError
from evals.record import environments as record_environments
from evals.record import read_runs
from evals.registry import environment_of, environment_of_record, installed
from evals.report.compare import reply_code
from evals.report.summary import summarize, summary_markdown
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.scoring.evidence import offerable_tools, stated
from evals.tasks import (
    Task,
    TaskFields,
    TaskSet,
    load_tasks,
    register_fields,
    task_file_problems,
    write_taskset,
)
from evals.tasks import checks as task_checks
from evals.tasks import fields as task_fields
from evals.workspace.data import WorkspaceData
from harness.plugins import PluginWarning
from lab.studies import strategies
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


PLUGIN = Path(__file__).parent.parent / "examples" / "plugins" / "loopbench-clock"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The clock's module, its environment in the registry (one line), and the registries of
    task fields and record data restored afterwards."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setattr(task_fields, "_FIELDS", dict(task_fields._FIELDS))
    monkeypatch.setattr(record_environments, "_MODELS", dict(record_environments._MODELS))
    monkeypatch.setattr(task_checks, "_REGISTERED", dict(task_checks._REGISTERED))
    monkeypatch.setattr(task_checks, "_JUDGES", set(task_checks._JUDGES))
    module = importlib.import_module("loopbench_clock.environment")
    env = installed(module.ClockEnvironment())
    monkeypatch.setattr(registry, "ENVIRONMENTS", (env, *registry.ENVIRONMENTS))
    return module


CHECKS: list[dict[str, Any]] = [{"kind": "contains", "value": "09:41"}]


def _clock_tasks(tmp_path: Path) -> Path:
    tasks = [
        {"id": "t1", "question": "What time is it?", "clock": {"zone": "UTC"}, "checks": CHECKS},
        {"id": "files", "question": "How many files are there?", "checks": CHECKS},
    ]
    path = tmp_path / "clock.json"
    path.write_text(json.dumps({"name": "clock", "tasks": tasks}))
    return path


async def _eval(tmp_path: Path, handle: Any, name: str, **settings: Any) -> dict[str, Any]:
    with running_server(server_app(handle, "fake")) as url:
        done = await run_eval(
            EvalSettings(
                serving=Serving(base_url=url, model="fake"), tasks=_clock_tasks(tmp_path),
                out=tmp_path / name, **settings,
            ),
            echo=lambda _: None,
        )  # fmt: skip
    return {r.task_id: r for r in read_runs(done)}


async def test_a_new_environment_is_one_module_and_one_registry_line(
    clock: Any, tmp_path: Path
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

    records = await _eval(tmp_path, handle, "run.jsonl")
    # Its task field, typed, from the task file; a task without it runs on files.
    task = load_tasks(_clock_tasks(tmp_path)).tasks[0]
    assert task.fields_of(clock.ClockFields) == clock.ClockFields(zone="UTC")
    assert environment_of(task).name == "clock"
    # The run: its tools offered, its intro in the system prompt.
    clock_requests = [b for b in seen if b["messages"][1]["content"] == "What time is it?"]
    assert {t["function"]["name"] for b in clock_requests for t in b["tools"]} == {"read_clock"}
    assert clock.INTRO in clock_requests[0]["messages"][0]["content"]
    assert records["t1"].tools_called == ["read_clock"] and records["t1"].correct
    # Its record data, read back from the run file typed by its own model.
    assert records["t1"].environment == clock.ClockData(zone="UTC", reads=1)
    assert isinstance(records["t1"].environment, clock.ClockData)
    assert environment_of_record(records["t1"]).name == "clock"
    # The other task ran on the workspace, as before.
    assert records["files"].environment == WorkspaceData() and not records["files"].correct
    # The scorer: a call of its tool written as text is a call, not an answer.
    assert "read_clock" in offerable_tools()
    assert stated('{"name": "read_clock"}').strip() == ""
    # Its figures in the run file's summary, over its own runs only, and their section.
    summary = summarize(list(records.values()))
    assert summary["clock"] == {"runs": 1, "read": 1, "reads": 1}
    assert "## How often the clock was read\n\n1 of 1 runs read the clock (1 reads)." in (
        summary_markdown("run", summary, list(records.values()))
    )
    # Figures under a key the summary has are left out, with a warning naming them.
    taken = dataclasses.replace(clock.ClockEnvironment.figures, key="accuracy")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(environment_of(task), "figures", taken)
        with pytest.warns(PluginWarning, match="clock environment's figures are left out"):
            summary = summarize(list(records.values()))
            text = summary_markdown("run", summary, list(records.values()))
    assert summary["accuracy"] == 0.5 and "How often the clock" not in text
    # The strategies answer from its reading: copying the clock's result is credited.
    reading = await environment_of(task).read_all(task, tmp_path / "read")
    assert reading.results == "It is 09:41."
    assert [s.strategy for s in strategies.attempts(task, reading)]


async def test_a_workflow_gathers_by_the_environments_own_rule(clock: Any, tmp_path: Path) -> None:
    """The chain workflow asks the environment how its evidence is gathered: the clock's rule
    reads the clock once, and the model answers from it."""
    asked: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append(body)
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return httpx.Response(200, json=answer(results[0] if results else "no idea"))

    records = await _eval(tmp_path, handle, "chain.jsonl", solver="chain")
    assert records["t1"].tools_called == ["read_clock"] and records["t1"].correct
    assert records["t1"].environment == clock.ClockData(zone="UTC", reads=1)


async def test_an_environments_answers_are_judged_by_its_own_claim_rule_or_none(
    clock: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A right answer's other statements are checked against its own environment's state
    only: the clock declares no claim rule, so "2 files" beside its time is not read against
    the default workspace's files (it was: "says 2 files; the workspace holds 3"); an
    environment that declares one gets its rule's words; the workspace keeps its own."""

    def handle(request: httpx.Request) -> httpx.Response:
        offered = [t["function"]["name"] for t in json.loads(request.content)["tools"]]
        if "read_clock" in offered:
            return httpx.Response(200, json=answer("It is 09:41; I see 2 files."))
        return httpx.Response(200, json=answer("There are 2 files; 09:41."))

    records = await _eval(tmp_path, handle, "claims.jsonl")
    assert records["t1"].correct and records["t1"].false_claims is None
    assert records["files"].false_claims == ["says 2 files; the workspace holds 3"]

    class Sundial(clock.ClockEnvironment):  # type: ignore[misc]
        name = "sundial"

        def false_claims(self, task: Task, answer: str | None) -> list[str]:
            return ["says files; a sundial holds none"] if "files" in (answer or "") else []

    monkeypatch.setattr(registry, "ENVIRONMENTS", (Sundial(), *registry.ENVIRONMENTS))
    records = await _eval(tmp_path, handle, "sundial.jsonl")
    assert records["t1"].false_claims == ["says files; a sundial holds none"]


async def test_an_environments_own_check_kind_and_judge_come_with_it(
    clock: Any, tmp_path: Path
) -> None:
    """The clock brings a check kind (``clock_read``) by declaring it: a task file names it,
    it is checked with the file and line, and it passes on the run that read the clock and
    fails on the one that did not; a ``judged`` check names a judge some environment has."""
    path = tmp_path / "read.yaml"
    path.write_text(
        "name: read\ntasks:\n"
        "  - {id: read, question: 'What time is it?', clock: {zone: UTC},"
        " checks: [{kind: clock_read}]}\n"
        "  - {id: twice, question: 'What time is it now?', clock: {zone: UTC},"
        " checks: [{kind: clock_read, times: 2}]}\n"
    )

    def handle(request: httpx.Request) -> httpx.Response:
        if turn_of(request) == 0:
            return httpx.Response(200, json=calls(("c1", "read_clock", "{}")))
        return httpx.Response(200, json=answer("It is 09:41."))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        done = await run_eval(
            EvalSettings(serving=Serving(base_url=url, model="fake"), tasks=path,
                         out=tmp_path / "read.jsonl"),
            echo=lambda _: None,
        )  # fmt: skip
    records = {r.task_id: r for r in read_runs(done)}
    assert records["read"].checks == [
        {"check": 'clock_read {"times": 1}', "kind": "clock_read", "passed": True}
    ]
    assert records["read"].correct and not records["twice"].correct
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\ntasks:\n  - id: t1\n    question: What time is it?\n"
        "    clock: {zone: UTC}\n    checks:\n      - {kind: clock_read, times: 0}\n"
        "      - {kind: judged, by: nobody}\n"
    )
    _, problems = task_file_problems(bad)
    assert problems == [
        f"{bad}, line 7: tasks.0.checks.0.times: Input should be greater than or equal to 1",
        f"{bad}, line 8: tasks.0.checks.1.by: Value error, no judge 'nobody'; the judges are: tau2",
    ]


async def test_a_workflow_on_an_environment_without_a_gathering_rule_says_so(
    clock: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment that declares no ``gather``: the workflows refuse its tasks with an
    error naming it, before any model call."""

    class Sundial(clock.ClockEnvironment):  # type: ignore[misc]
        name = "sundial"
        gather = None

    monkeypatch.setattr(registry, "ENVIRONMENTS", (Sundial(), *registry.ENVIRONMENTS))
    asked: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content))
        return httpx.Response(200, json=answer("09:41"))

    with pytest.raises(EvalError, match="gather evidence on a task's 'sundial' environment"):
        await _eval(tmp_path, handle, "w.jsonl", solver="chain")
    assert asked == []


def test_an_environments_task_fields_are_checked_with_the_file_and_line(
    clock: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\ntasks:\n  - id: t1\n    question: What time is it?\n"
        "    clock: {zone: Mars}\n    checks: [{kind: contains, value: x}]\n"
    )
    _, problems = task_file_problems(bad)
    assert problems == [
        f"{bad}, line 5: tasks.0.clock.zone: Input should be 'UTC' or 'Asia/Ho_Chi_Minh'"
    ]
    # Where no environment declares the key, it is an unknown field like any other.
    monkeypatch.setattr(task_fields, "_FIELDS", {})
    _, problems = task_file_problems(_clock_tasks(tmp_path))
    assert problems == [
        f"{tmp_path / 'clock.json'}, line 1: tasks.0.clock: Extra inputs are not permitted"
    ]


class Dial(TaskFields):
    """A flat model: each field under a key of its own at the task's top level."""

    key: ClassVar[str] = "dial"
    flat: ClassVar[bool] = True
    shared: ClassVar[tuple[str, ...]] = ("dialHand",)
    hand: str | None = Field(default=None, alias="dialHand")
    face: Literal["roman", "plain"] | None = None


def test_an_environments_fields_may_take_several_keys_of_the_task_file_and_a_set_gives_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The MCP environment's servers, reading calls and intro are three keys of one model: a
    flat model's fields are read from the task's top level, held as one value, written back
    where they were read, and a set's top gives them to each task that names none."""
    monkeypatch.setattr(task_fields, "_FIELDS", dict(task_fields._FIELDS))
    register_fields(Dial)
    path = tmp_path / "dial.yaml"
    path.write_text(
        "name: dial\ndialHand: minute\ntasks:\n"
        "  - {id: a, question: Which hand, checks: [{kind: contains, value: x}]}\n"
        "  - {id: b, question: Which hand, dialHand: hour, face: roman,\n"
        "     checks: [{kind: contains, value: x}]}\n"
    )
    a, b = load_tasks(path).tasks
    assert a.fields_of(Dial) == Dial(dialHand="minute")
    assert b.fields_of(Dial) == Dial(dialHand="hour", face="roman")
    assert b.model_dump(exclude_none=True, by_alias=True)["dialHand"] == "hour"
    # A task that writes the key empty (null) takes the set's, as one that leaves it out.
    nulled = TaskSet.model_validate(
        {
            "name": "d",
            "dialHand": "minute",
            "tasks": [{**a.model_dump(by_alias=True), "dialHand": None}],
        }
    )
    assert nulled.tasks[0].fields_of(Dial) == Dial(dialHand="minute")
    # The set's value is the task's own: the same hash as a task that names it.
    written = Task.model_validate(
        {"id": "a", "question": "Which hand", "dialHand": "minute", "checks": CHECKS[:1]}
    )
    assert (
        written.task_hash == Task.model_validate({**a.model_dump(), "checks": CHECKS[:1]}).task_hash
    )
    assert (
        written.task_hash
        != Task.model_validate(
            {"id": "a", "question": "Which hand", "checks": CHECKS[:1]}
        ).task_hash
    )
    # Written back: a shared key once at the set's top only where every task has the same.
    out = tmp_path / "out.json"
    write_taskset(load_tasks(path), out)
    kept = json.loads(out.read_text())  # the set's value kept, the task's own beside it
    assert (kept["dialHand"], kept["tasks"][1]["dialHand"]) == ("minute", "hour")
    assert load_tasks(out).content_hash == load_tasks(path).content_hash
    same = TaskSet(name="dial", tasks=[a, b.model_copy(update={"environment_fields": {}})])
    write_taskset(TaskSet.model_validate({**same.model_dump(), "dialHand": "minute"}), out)
    lifted = json.loads(out.read_text())
    assert lifted["dialHand"] == "minute" and all("dialHand" not in t for t in lifted["tasks"])
    # A bad value at the set's top is named once, at its line, not once per task; the tasks'
    # own problems are named beside it.
    path.write_text(
        path.read_text()
        .replace("face: roman", "face: gothic")
        .replace("dialHand: minute", "dialHand: [minute]")
    )
    _, problems = task_file_problems(path)
    assert problems == [
        f"{path}, line 5: tasks.1.face: Input should be 'roman' or 'plain'",
        f"{path}, line 2: dialHand: Input should be a valid string",
    ]

    # A key the task model or another environment has is refused.
    class Asks(TaskFields):
        key: ClassVar[str] = "asks"
        flat: ClassVar[bool] = True
        question: str | None = None

    with pytest.raises(ValueError, match="task field 'question' is taken"):
        register_fields(Asks)

    class Servers(TaskFields):
        key: ClassVar[str] = "servers"
        flat: ClassVar[bool] = True
        servers: int | None = Field(default=None, alias="mcpServers")

    with pytest.raises(ValueError, match="task field 'mcpServers' is taken"):
        register_fields(Servers)
    # A key the task set has (its own ``description``), or a flat model's key that the task's
    # hash has (``question``), likewise.
    described = type("Described", (TaskFields,), {"key": "description"})
    with pytest.raises(ValueError, match="task field 'description' is taken"):
        register_fields(described)
    flat_question = type("FlatQuestion", (TaskFields,), {"key": "question", "flat": True})
    with pytest.raises(ValueError, match="task field 'question' is taken"):
        register_fields(flat_question)
    assert register_fields(Dial) is Dial  # the same model again is no clash


def test_each_built_in_environment_is_one_package_and_the_core_defines_none() -> None:
    """An environment's object, record data, task fields, task sources and figures live in one
    package of its own; the record and task layers define no environment's data or fields."""
    for environment in registry.BUILT_IN:
        module = type(environment).__module__
        package = module.rsplit(".", 1)[0]
        assert package not in {"evals", "evals.environments"}, module
        declared = [getattr(environment, "data", None), *getattr(environment, "task_fields", ())]
        modules = {m.__module__ for m in declared if m is not None}
        modules |= {s.write.__module__ for s in getattr(environment, "sources", ())}
        figures = getattr(environment, "figures", None)
        if figures is not None:
            modules |= {figures.of.__module__, figures.markdown.__module__}
        assert all(m.startswith(package + ".") for m in modules), (environment.name, modules)
    assert {"workspace", "database", "mcp", "tau2"} <= set(record_environments._MODELS)
    for model in [*record_environments._MODELS.values(), *task_fields._FIELDS.values()]:
        assert not model.__module__.startswith(("evals.record", "evals.tasks")), model
    assert set(registry.sources()) >= {"files", "sql", "git"}
    # A change to any of their packages marks two runs' commits as not like for like.
    assert {"evals/workspace", "evals/database", "evals/mcp", "evals/tau2"} <= set(reply_code())


def test_an_environments_task_source_is_what_generate_offers(clock: Any, tmp_path: Path) -> None:
    """A source is declared on its environment: ``generate --source`` offers it and writes
    tasks that run there."""
    from evals.cli import main

    out = tmp_path / "clock.json"
    assert main(["generate", "--source", "clock", "--n", "3", "--out", str(out)]) == 0
    tasks = load_tasks(out).tasks
    assert [t.id for t in tasks] == ["clock-0", "clock-1", "clock-2"]
    assert [t.fields_of(clock.ClockFields) for t in tasks] == [
        clock.ClockFields(zone=z) for z in ("UTC", "Asia/Ho_Chi_Minh", "UTC")
    ]
    assert {environment_of(t).name for t in tasks} == {"clock"}
    assert "clock" in registry.sources() and "files" in registry.sources()


def test_a_plugin_declaring_a_task_source_already_taken_is_left_out(
    clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's source named as a built-in's is refused with the plugin, before anything of
    it is registered; it never shadows the built-in's under ``generate --source``."""
    from evals.record import Data
    from evals.tasks.sources import Source

    class SundialData(Data):
        name: Literal["sundial"] = "sundial"

    class Sundial(clock.ClockEnvironment):  # type: ignore[misc]
        name, data, task_fields, check_kinds = "sundial", SundialData, (), ()
        sources = (Source("files", "not the workspace's", {"dev": range(1)}, clock.write_tasks),)

    refused: list[str] = []

    def load(group: str, check: Any) -> list[Any]:
        try:
            return [check(Sundial)]
        except ValueError as exc:
            refused.append(str(exc))
            return []

    monkeypatch.setattr(registry, "loaded", load)
    assert registry._plugins() == []
    assert refused == ["environment 'sundial': a task source named 'files' is taken"]
    assert "sundial" not in record_environments._MODELS
    assert registry.sources()["files"].help.startswith("questions over a workspace")


def test_an_environment_that_cannot_be_registered_registers_nothing(clock: Any) -> None:
    """Everything an environment declares is checked before any of it is registered: a task
    field whose key the task model has leaves no record data behind."""

    from evals.record import Data
    from evals.tasks import TaskFields

    class DialData(Data):
        name: Literal["dial"] = "dial"

    class Taken(TaskFields):
        key = "question"

    class Dial(clock.ClockEnvironment):  # type: ignore[misc]
        name = "dial"
        data = DialData
        task_fields = (Taken,)

    with pytest.raises(ValueError, match="task field 'question' is taken"):
        installed(Dial())
    assert "dial" not in record_environments._MODELS

    class Misnamed(clock.ClockEnvironment):  # type: ignore[misc]
        name = "sundial"

    with pytest.raises(ValueError, match="its record data names another environment"):
        installed(Misnamed())


def test_an_environment_owns_the_settings_only_its_tasks_read(clock: Any) -> None:
    """The database owns the SQL tools' limits: a record of another environment keeps the
    preset without them. An environment that claims a setting another owns, or one no hook
    reads, is refused before anything is registered."""
    settings = {"row_cap": 20, "statement_timeout_s": 15.0, "nudges": 2}
    assert record_environments.preset_used(settings, {"database"}) == settings
    assert record_environments.preset_used(settings, {"workspace"}) == {"nudges": 2}

    class Greedy(clock.ClockEnvironment):  # type: ignore[misc]
        name, data, task_fields, check_kinds = "greedy", None, (), ()
        settings = ("row_cap",)

    with pytest.raises(ValueError, match="'row_cap' \\(database's\\) are owned"):
        installed(Greedy())

    class Unknown(clock.ClockEnvironment):  # type: ignore[misc]
        name, data, task_fields, check_kinds = "unknown", None, (), ()
        settings = ("no_such_setting",)

    with pytest.raises(ValueError, match="no setting 'no_such_setting'"):
        installed(Unknown())
    assert record_environments.preset_used(settings, {"greedy", "unknown"}) == {"nudges": 2}
