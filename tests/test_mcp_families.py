"""The MCP task families, through the community servers from the registries (make
mcp-servers): the oracle is credited on each, the question-blind strategies are not, and the
committed task sets are what the generators write."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evals.mcp import git as git_family
from evals.mcp.fields import McpFields
from evals.mcp.surfaces import over_surface
from evals.record import RunRecord
from evals.registry import environment_of
from evals.report.pairing import PairingError, paired
from evals.scoring.evidence import received, score
from evals.tasks import (
    Facts,
    ListOf,
    NumberIs,
    Received,
    Task,
    TaskSet,
    YesNo,
    load_tasks,
    write_taskset,
)
from harness.mcp.servers import MCP_BIN
from harness.state import new_run
from lab.studies import strategies
from tests.helpers import run_record

MCP_TASKS = Path("evals/tasks/mcp")
needs_servers = pytest.mark.skipif(
    not all((MCP_BIN / s).exists() for s in ("mcp-server-git", "mcp-server-sqlite")),
    reason="the community MCP servers are not installed (make mcp-servers)",
)


def oracle_text(task: Task) -> str:
    """The expected answer, stated."""
    match task.answer:
        case Facts(facts=facts, expected=expected):
            return " ".join(facts[s][0] for s in expected)
        case ListOf(expected=expected):
            return ", ".join(expected)
        case YesNo(expected=expected):
            return "Yes." if expected else "No."
        case NumberIs(expected=expected):
            return f"The answer is {expected:.2f}." if expected % 1 else f"It is {int(expected)}."
    assert task.answer is not None
    return f"It is {task.answer.expected}."


_PATH = re.compile(r"(?:/[\w.\-]+){2,}")


def _leaks(task: Task, messages: list[dict[str, Any]]) -> list[str]:
    """Where the model is shown the task's id, or its kind in the run's folders: the folders in
    every message's paths above the workspace (the intro names the run's folder; listings and
    results echo it; the files inside are the task's own, named by its question)."""
    text = json.dumps(messages)
    words = [task.id, *([task.kind] if task.kind else [])]
    folders = [p.split("/workspace")[0] for p in _PATH.findall(text)]
    found = [p for p in folders for w in words if w in p]
    return found + [f"prompt: {task.id}" for m in messages[:1] if task.id in str(m["content"])]


async def _oracle_and_strategies(taskset: TaskSet, scratch: Path) -> None:
    for task in taskset.tasks:
        reading = await environment_of(task).read_all(task, scratch)
        assert reading.state.status == "completed", (task.id, reading.state.error)
        # Nothing of the task's id or kind reaches the model (a folder named 12-missing did).
        assert _leaks(task, reading.state.messages) == [], task.id
        checks = score(task, strategies.answered(reading.state, oracle_text(task)))
        assert all(c["passed"] for c in checks), (task.id, checks)
        # Without reading, the oracle's answer earns nothing: the evidence check is real.
        blind = score(
            task, strategies.answered(new_run("oracle", task.question), oracle_text(task))
        )
        assert not all(c["passed"] for c in blind), task.id
    reports = await strategies.judge(taskset, scratch / "judge")
    assert reports and all(r.problems() == [] for r in reports), [
        (r.family, r.problems()) for r in reports
    ]


@needs_servers
async def test_git_family_oracle_is_credited_and_blind_strategies_are_not(tmp_path: Path) -> None:
    taskset = git_family.generate(0, len(git_family.KINDS), "dev")
    assert [t.kind for t in taskset.tasks] == list(git_family.KINDS)
    await _oracle_and_strategies(taskset, tmp_path)


def test_a_history_builds_the_same_commits_anywhere(tmp_path: Path) -> None:
    history = git_family.history(7)
    first = git_family.build(history, tmp_path / "a")
    second = git_family.build(history, tmp_path / "b")
    assert first == second and len(first) == len(history.commits)
    assert git_family.history(7).fingerprint == history.fingerprint
    assert git_family.history(8).fingerprint != history.fingerprint


@needs_servers
@pytest.mark.parametrize("surface", ["ours", "filesystem"])
async def test_files6_over_each_surface_credits_the_oracle_only(
    surface: str, tmp_path: Path
) -> None:
    taskset = over_surface(load_tasks("evals/tasks/files6.json"), "files", surface)
    await _oracle_and_strategies(taskset, tmp_path)


@needs_servers
@pytest.mark.parametrize("surface", ["ours", "sqlite"])
async def test_sql_over_each_surface_credits_the_oracle_only(surface: str, tmp_path: Path) -> None:
    full = load_tasks("evals/tasks/sql-test-s1000-n60.json")
    kinds: dict[str, Task] = {}
    for task in full.tasks:  # one question of each answer type: a number, a name, a list
        assert task.answer is not None
        kinds.setdefault(task.answer.type, task)
    taskset = over_surface(TaskSet(name="sql", tasks=list(kinds.values())), "sql", surface)
    await _oracle_and_strategies(taskset, tmp_path)


def test_the_committed_mcp_task_sets_are_what_the_generators_write(tmp_path: Path) -> None:
    committed = sorted(MCP_TASKS.glob("*.json"))
    assert len(committed) == 12
    for path in committed:
        assert load_tasks(path).tasks
    write_taskset(git_family.generate(0, 30, "dev"), tmp_path / "git.json")
    assert json.loads((tmp_path / "git.json").read_text()) == json.loads(
        (MCP_TASKS / "git-dev-s0-n30.json").read_text()
    )
    for surface in ("ours", "filesystem"):
        written = over_surface(load_tasks("evals/tasks/files6.json"), "files", surface)
        write_taskset(written, tmp_path / f"{surface}.json")
        assert (tmp_path / f"{surface}.json").read_text() == (
            MCP_TASKS / f"files6-{surface}.json"
        ).read_text()


def test_runs_over_two_surfaces_pair_only_when_asked_and_only_under_the_same_checks() -> None:
    def run(surface: str, checks: str = "c1") -> list[RunRecord]:
        return [
            run_record(
                task_set=f"files6-mcp-{surface}", task_id=t, task_hash=f"{surface}-{t}",
                checks_hash=checks, correct=(t != "b" or surface == "ours"),
            )
            for t in ("a", "b", "c")
        ]  # fmt: skip

    with pytest.raises(PairingError, match="different task sets"):
        paired(run("ours"), run("filesystem"))
    result = paired(run("ours"), run("filesystem"), across_surfaces=True)
    assert (result.tasks, result.only_a, result.only_b) == (3, ["b"], [])
    with pytest.raises(PairingError, match="judged by other checks"):
        paired(run("ours"), run("filesystem", checks="c2"), across_surfaces=True)


async def _read_as(task: Task, reading: list[tuple[str, dict[str, Any]]], scratch: Path) -> Any:
    """The state of a run that made ``reading`` through the task's real servers."""
    mcp = task.fields_of(McpFields)
    assert mcp is not None
    fields = {**task.environment_fields, mcp.key: mcp.model_copy(update={"reading": reading})}
    task = task.model_copy(update={"environment_fields": fields})
    result = await environment_of(task).read_all(task, scratch)
    assert result.state.status == "completed", result.state.error
    return result.state


@needs_servers
async def test_the_filesystem_servers_no_such_file_is_evidence_of_absence(tmp_path: Path) -> None:
    """A read of the named file that the reference server answers ENOENT shows it is not there;
    one of a path outside the task's folder shows nothing."""
    taskset = load_tasks(MCP_TASKS / "gen-test-s1000-n60-filesystem.json")
    task = next(t for t in taskset.tasks if t.kind == "missing")
    assert isinstance(task.answer, YesNo)
    name = task.answer.subject
    for path, credited in ((f"{{workspace}}/{name}", True), (f"{{workspace}}/sub/{name}", False)):
        state = await _read_as(task, [("read_text_file", {"path": path})], tmp_path / str(credited))
        assert [(r.name, r.ok, r.ran) for r in state.tool_log] == [("read_text_file", False, True)]
        checks = score(task, strategies.answered(state, "No."))
        assert all(c["passed"] for c in checks) is credited, (path, checks)
    present = next(t for t in taskset.tasks if t.kind == "exists")
    assert isinstance(present.answer, YesNo)
    reading = [("get_file_info", {"path": f"{{workspace}}/{present.answer.subject}"})]
    state = await _read_as(present, reading, tmp_path / "present")
    assert all(c["passed"] for c in score(present, strategies.answered(state, "Yes.")))


@needs_servers
async def test_a_log_of_the_last_commit_is_no_evidence_of_who_changed_a_file_last(
    tmp_path: Path,
) -> None:
    """ "Who changed FILE last?": a log cut to one commit names whoever committed last, which is
    right only by luck; the evidence is the commit that changed the file, shown with it. A
    count needs every commit's message."""
    taskset = load_tasks(MCP_TASKS / "git-dev-s0-n30.json")
    lucky = 0
    for task in (t for t in taskset.tasks if t.kind == "last_author"):
        state = await _read_as(
            task, [("git_log", {"repo_path": "{workspace}", "max_count": 1})], tmp_path / task.id
        )
        checks = score(task, strategies.answered(state, oracle_text(task)))
        assert not all(c["passed"] for c in checks), task.id
        # What the old rule asked of a result: the commit's message and author, no file.
        (evidence,) = [c for c in task.checks if isinstance(c, Received)]
        text = received_text(state)
        lucky += all(s in text for s in evidence.result_contains[:2])
    assert lucky > 0  # the case the old rule credited is among them
    count = next(t for t in taskset.tasks if t.kind == "count")
    assert isinstance(count.answer, NumberIs)
    short = int(count.answer.expected) - 1
    state = await _read_as(
        count, [("git_log", {"repo_path": "{workspace}", "max_count": short})], tmp_path / "count"
    )
    assert not all(
        c["passed"] for c in score(count, strategies.answered(state, oracle_text(count)))
    )


def received_text(state: Any) -> str:
    return "\n".join(r.content for r in received(state))
