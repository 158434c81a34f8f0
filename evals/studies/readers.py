"""What the strategies answer from: the real loop and the real tools over a task's workspace
(list it, read every file) or its database (describe it, read every table, run the gold
SQL), driven by a provider that makes exactly those calls, so every result a grounded check
asks for is there."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from evals.tasks import Task
from harness.client import ProviderClient, RetryPolicy
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.sql import DESCRIBE_TOOL, RUN_SQL_TOOL, open_database, sql_tools
from harness.state import RunState, new_run
from harness.tools import default_tools, listed_names
from harness.workspace import SEED_FILES, create_workspace


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-strategy",
        "object": "chat.completion",
        "model": "strategy",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _caller(calls: list[tuple[str, dict[str, Any]]]) -> Callable[[httpx.Request], httpx.Response]:
    """A provider that makes ``calls`` (tool name, arguments), one a turn, then says it is
    done."""

    def handle(request: httpx.Request) -> httpx.Response:
        turn = sum(1 for m in json.loads(request.content)["messages"] if m["role"] == "assistant")
        if turn >= len(calls):
            return httpx.Response(200, json=_completion({"role": "assistant", "content": "."}))
        name, arguments = calls[turn]
        call = {"name": name, "arguments": json.dumps(arguments)}
        tool_call = {"id": f"c{turn + 1}", "type": "function", "function": call}
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        return httpx.Response(200, json=_completion(message))

    return handle


async def read_database(task: Task, scratch: Any) -> tuple[RunState, list[str], dict[str, str]]:
    """The real loop and the real SQL tools over ``task``'s database: describe it, read the
    first rows of every table, and run the question's gold SQL, so every result a grounded
    check asks for is there. The contents are each result, by what was asked."""
    from evals.tasks.sql.bank import TABLES
    from evals.tasks.sql.build import sqlite_file
    from evals.tasks.sql.questions import gold_for

    assert task.database is not None
    path = sqlite_file(task.database.seed, scratch / "databases", task.database.fingerprint)
    gold = gold_for(task.question)
    queries = [f"SELECT * FROM {t}" for t in TABLES] + ([gold[0]] if gold else [])
    workspace = create_workspace(scratch / task.id / "workspace", files={})
    state = new_run("strategy", task.question)
    sql_calls = [(DESCRIBE_TOOL, {}), *((RUN_SQL_TOOL, {"query": q}) for q in queries)]
    transport = httpx.MockTransport(_caller(sql_calls))
    retry = RetryPolicy(max_retries=0, base_delay_s=0.0, max_delay_s=0.0)
    config = LoopConfig(max_turns=len(queries) + 3)
    tools = sql_tools(open_database(str(path)))
    async with ProviderClient("http://strategy.invalid/v1", retry=retry, transport=transport) as c:
        await run_loop(state, c, tools, workspace, config)
    results = {m.get("tool_call_id"): str(m.get("content")) for m in state.messages}
    asked = [DESCRIBE_TOOL, *queries]
    contents = {q: results.get(f"c{i + 1}", "") for i, q in enumerate(asked)}
    return state, [], contents


async def read_all(task: Task, scratch: Any) -> tuple[RunState, list[str], dict[str, str]]:
    """The real loop over ``task``'s workspace, listing it and reading every file (or over its
    database, :func:`read_database`): the state every strategy answers from, the names as
    listed, and the contents as read."""
    if task.database is not None:
        return await read_database(task, scratch)
    files = task.workspace if task.workspace is not None else SEED_FILES
    workspace = create_workspace(scratch / task.id / "workspace", files=files)
    names = sorted(files)
    state = new_run("strategy", task.question)
    file_calls = [("list_files", {}), *(("read_file", {"path": n}) for n in names)]
    transport = httpx.MockTransport(_caller(file_calls))
    retry = RetryPolicy(max_retries=0, base_delay_s=0.0, max_delay_s=0.0)
    async with ProviderClient("http://strategy.invalid/v1", retry=retry, transport=transport) as c:
        await run_loop(state, c, default_tools(), workspace, LoopConfig(max_turns=len(names) + 3))
    results = {m.get("tool_call_id"): str(m.get("content")) for m in state.messages}
    listed = listed_names(results.get("c1", ""))
    contents = {name: results.get(f"c{i + 2}", "") for i, name in enumerate(names)}
    return state, listed or names, contents
