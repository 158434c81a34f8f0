"""Nothing of a task's id or kind reaches the model, in any committed task set: every request
the model is sent (the prompt, the tools, every tool result, every path) through the real
runner and the task's own environment, with a provider that makes the calls a model would
(every tool that takes no arguments, and the task's own reading calls) and then answers. A
folder named after its task (``12-missing``) told the model the answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.mcp.fields import McpFields
from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.tasks import Task, TaskSet, load_tasks, write_taskset
from evals.tau2.bridge import tau2_python
from evals.tau2.fields import Tau2Ref
from harness.workspace import SEED_FILES
from serve_local.inprocess import running_server
from tests.fake_provider import answer, server_app

TASK_FILES = sorted(
    p for p in [*Path("evals/tasks").glob("*.json"), *Path("evals/tasks/mcp").glob("*.json")]
)
# The folder a run's tools work in, as the prompt shows it (the MCP environment's intro).
_SHOWN_FOLDER = re.compile(r"(/[^\s'\"]*/workspace)\b")
_PATH = re.compile(r"(?:/[\w.\-]+){2,}")
# A tool that takes seconds by design (for time limits) and shows nothing of a task.
_SLOW = {"scan_archive"}


def sample(path: Path, most: int) -> TaskSet:
    """One task of each kind (at most ``most``), the yes/no ones first: where a leak would
    give the answer away."""
    taskset = load_tasks(path)
    chosen: dict[str, Task] = {}
    for task in sorted(taskset.tasks, key=lambda t: t.kind not in ("exists", "missing")):
        chosen.setdefault(task.kind or task.id, task)
    return taskset.model_copy(update={"tasks": list(chosen.values())[:most]})


def _calls(body: dict[str, Any], task: Task | None) -> list[dict[str, Any]]:
    """Every offered tool that needs no argument, and the task's reading calls with the folder
    the prompt names."""
    made = []
    for tool in body.get("tools") or []:
        function = tool["function"]
        if function["name"] not in _SLOW and not (function.get("parameters") or {}).get("required"):
            made.append((function["name"], {}))
    shown = _SHOWN_FOLDER.search(json.dumps(body["messages"][0]))
    mcp = task.fields_of(McpFields) if task is not None else None
    for name, arguments in (mcp.reading if mcp is not None else None) or []:
        text = json.dumps(arguments)
        if "{workspace}" in text and shown is None:
            continue
        made.append((name, json.loads(text.replace("{workspace}", shown[1] if shown else ""))))
    return [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(made)
    ]


def leaks(task: Task, sent: str) -> list[str]:
    """Where the text sent to the model shows the task's id (outside the task's own words: its
    question and its files), or its kind in a path."""
    files = task.workspace if task.workspace is not None else SEED_FILES
    own = [task.question, *files, *files.values()]
    for text in sorted(own, key=len, reverse=True):
        sent = sent.replace(json.dumps(text)[1:-1], " ")
    found = [m[0] for m in re.finditer(rf"(?<![\w-]){re.escape(task.id)}(?![\w-])", sent)]
    if task.kind:
        found += [p for p in _PATH.findall(sent) if re.search(rf"\b{task.kind}\b", p)]
    return found


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: p.stem)
async def test_no_task_id_or_kind_reaches_the_model(path: Path, tmp_path: Path) -> None:
    taskset = sample(path, 3 if path.parent.name == "mcp" else 10)
    by_question = {t.question: t for t in taskset.tasks}
    sent: dict[str, list[str]] = {t.id: [] for t in taskset.tasks}

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        task = by_question[question]
        sent[task.id].append(request.content.decode())
        made = any(m["role"] == "assistant" for m in body["messages"])
        tool_calls = [] if made else _calls(body, task)
        if tool_calls:
            message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
            return httpx.Response(200, json={**answer(""), "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls"}
            ]})  # fmt: skip
        return httpx.Response(200, json=answer("I looked."))

    small = tmp_path / path.name
    write_taskset(taskset, small)
    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            serving=Serving(base_url=url, model="fake"), tasks=small, out=tmp_path / "r.jsonl"
        )
        records = read_runs(await run_eval(settings, echo=lambda _: None))
    assert {r.task_id for r in records} == set(sent)
    for record in records:  # each task ran, and its tools answered the calls made
        assert record.status == "completed", (record.task_id, record.error)
        assert record.tool_runs > 0, record.task_id
    for task in taskset.tasks:
        assert sent[task.id], task.id
        assert leaks(task, "\n".join(sent[task.id])) == [], task.id


def test_the_scan_finds_a_folder_named_after_its_task() -> None:
    """The scan can fail: the path the MCP runs once showed is found, id and kind."""
    task = load_tasks("evals/tasks/mcp/gen-test-s1000-n60-filesystem.json").tasks[1]
    assert task.id == "01-missing"
    shown = json.dumps({"content": f"[DIR] /tmp/loopbench-mcp/{task.id}/workspace"})
    assert leaks(task, shown) == [task.id, f"/tmp/loopbench-mcp/{task.id}/workspace"]
    assert leaks(task, json.dumps({"content": task.question})) == []


TAU2_FILES = sorted(Path("evals/tasks/tau2").glob("*.json"))


@pytest.mark.skipif(
    not tau2_python().exists(), reason="tau2's virtualenv is absent (make tau2-venv)"
)
@pytest.mark.parametrize("path", TAU2_FILES, ids=lambda p: p.stem)
def test_no_tau2_task_id_reaches_the_agent(path: Path, tmp_path: Path) -> None:
    """A τ² task through the real conversation path (τ²'s environment through its pipe, a
    user that states a need and stops): every request the agent is sent is free of the task's
    id and of τ²'s own id for it."""
    from tests.fake_provider import fake_client
    from tests.helpers import run_tau2_task

    task = load_tasks(path).tasks[0]
    ref = task.fields_of(Tau2Ref)
    assert ref is not None
    agent: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "<scenario>" not in body["messages"][0]["content"]:  # the agent
            agent.append(request.content.decode())
            return httpx.Response(200, json=answer("Could you tell me more?"))
        said = any(m["role"] == "assistant" for m in body["messages"])
        return httpx.Response(200, json=answer("###STOP###" if said else "I need some help."))

    ran, _ = run_tau2_task(task, fake_client(handle), tmp_path, max_turns=4)
    assert ran.state.error is None, ran.state.error
    assert agent, "the agent was asked nothing"
    sent = "\n".join(agent)
    assert task.id not in sent
    if len(ref.task) >= 6:  # telecom's ids are long names; airline's and retail's numbers
        assert ref.task not in sent
