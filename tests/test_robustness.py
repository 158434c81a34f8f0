"""The loop against what broken models and servers send: tool bugs, unusable paths, reused call
ids, and arbitrary replies (a hypothesis fuzz). Every run ends in an exit, saved."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.approvals import approve
from harness.config import LoopConfig
from harness.errors import PathRefused
from harness.loop import run_loop
from harness.persist import load
from harness.setup import Setup
from harness.state import RunState, asked_calls, new_run
from harness.tools import Tool, ToolContext, default_tools
from harness.trace import Recorder
from harness.workspace import Workspace, create_workspace
from serve_local.validation import parse_body
from tests.fake_provider import Answer, answer, by_turn, calls, completion, fake_client
from tests.helpers import record_of

EXITS = {"completed", "failed", "max_turns_exceeded", "budget_exceeded", "interrupted"}


async def drive(
    answers: list[Answer],
    ws: Workspace,
    tools: list[Tool] | None = None,
    state: RunState | None = None,
    recorder: Recorder | None = None,
    requests: list[httpx.Request] | None = None,
    **config: Any,
) -> RunState:
    handler = by_turn(answers)

    def keep(request: httpx.Request) -> httpx.Response:
        if requests is not None:
            requests.append(request)
        return handler(request)

    state = state or new_run("fake", "Tidy the workspace.")
    async with fake_client(keep) as client:
        return await run_loop(
            state, client, Setup(tools or default_tools(), ws), LoopConfig.of(**config), recorder
        )


# Tool bugs ---------------------------------------------------------------------------------


async def broken(args: dict[str, Any], ctx: ToolContext) -> str:
    raise RuntimeError("the index is corrupt")


BROKEN = Tool("index", "Look something up.", {"type": "object"}, broken, read_only=True)


async def test_an_exception_in_a_tool_is_an_error_result_recorded_as_a_tool_bug(
    workspace: Workspace, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    recorder = Recorder(state_dir=tmp_path / "states", trace_path=trace)
    state = await drive(
        [(200, calls(("a", "index", "{}"))), (200, answer("The index is broken."))],
        workspace,
        tools=[*default_tools(), BROKEN],
        recorder=recorder,
    )
    assert (state.status, state.answer) == ("completed", "The index is broken.")
    result = next(m for m in state.messages if m["role"] == "tool")
    assert result["content"] == (
        "Error: the tool index failed unexpectedly (RuntimeError: the index is corrupt)"
    )
    assert [(r.name, r.ok, r.ran, r.bug) for r in state.tool_log] == [("index", False, True, True)]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [e["bug"] for e in events if e["type"] == "tool_result"] == [True]
    assert load(tmp_path / "states", state.run_id) == state
    record = record_of(state)
    assert record.tool_bugs == [
        "index: the tool index failed unexpectedly (RuntimeError: the index is corrupt)"
    ]


async def test_a_tool_bug_under_the_fatal_policy_fails_the_run(workspace: Workspace) -> None:
    state = await drive(
        [(200, calls(("a", "index", "{}"))), (200, answer("never asked"))],
        workspace,
        tools=[*default_tools(), BROKEN],
        tool_errors="fatal",
    )
    assert (state.status, state.turns) == ("failed", 1)
    assert state.error is not None and "RuntimeError: the index is corrupt" in state.error


# Paths no file can have -----------------------------------------------------------------------

BAD_PATHS: list[Any] = ["errors\x00.log", "x" * 5000, "a/" + "b" * 300, 5, None, ["notes.txt"]]


@pytest.mark.parametrize("path", BAD_PATHS, ids=["nul", "5000", "long-name", "int", "null", "list"])
def test_unusable_paths_are_refused_for_good(workspace: Workspace, path: Any) -> None:
    for tool in ("read_file", "delete_file"):
        run = next(t for t in default_tools() if t.name == tool).run
        with pytest.raises(PathRefused) as caught:
            asyncio.run(run({"path": path}, ToolContext(workspace=workspace)))
        assert caught.value.permanent


async def test_unusable_paths_go_back_to_the_model_and_the_run_goes_on(
    workspace: Workspace,
) -> None:
    reads = [(f"r{i}", "read_file", json.dumps({"path": p})) for i, p in enumerate(BAD_PATHS)]
    state = await drive([(200, calls(*reads)), (200, answer("No file could be read."))], workspace)
    assert (state.status, state.turns) == ("completed", 2)
    results = [m["content"] for m in state.messages if m["role"] == "tool"]
    # Refused by the workspace (NUL, too long) or by read_file's schema (not a string).
    refusals = ("Error: refused", "Error: the arguments do not fit read_file's parameters")
    assert len(results) == len(BAD_PATHS) and all(r.startswith(refusals) for r in results)
    assert not any(r.bug for r in state.tool_log)
    stopped = await drive(
        [(200, calls(*reads)), (200, answer("never asked"))],
        workspace,
        stop_on_permanent_error=True,
    )
    assert (stopped.status, stopped.turns) == ("failed", 1)


# Call ids a provider reuses -----------------------------------------------------------------


async def test_an_approval_never_covers_a_later_call_with_the_same_id(workspace: Workspace) -> None:
    """Several servers number each reply's calls from zero: ``call_0`` on every turn."""
    answers: list[Answer] = [
        (200, calls(("call_0", "delete_file", '{"path": "access.log"}'))),
        (200, calls(("call_0", "delete_file", '{"path": "errors.log"}'))),
        (200, answer("Deleted both.")),
    ]
    requests: list[httpx.Request] = []
    state = await drive(answers, workspace, requests=requests)
    assert state.interruption is not None and state.interruption["call_id"] == "call_0"
    approve(state, "call_0")
    await drive(answers, workspace, state=state, requests=requests)
    assert not (workspace.root / "access.log").exists()
    assert (workspace.root / "errors.log").exists()  # not run: nobody approved it
    assert state.status == "interrupted" and state.interruption is not None
    renamed = state.interruption["call_id"]
    assert renamed != "call_0" and state.interruption["args"] == '{"path": "errors.log"}'
    assert state.turn_records[1].renamed_call_ids == {renamed: "call_0"}
    ledger = json.loads((workspace.root / ".ledger.json").read_text())
    assert ledger == {f"{state.run_id}:1.0": "deleted access.log"}
    approve(state, renamed)
    await drive(answers, workspace, state=state, requests=requests)
    assert (state.status, state.answer) == ("completed", "Deleted both.")
    assert not (workspace.root / "errors.log").exists()
    results = {m["tool_call_id"]: m["content"] for m in state.messages if m["role"] == "tool"}
    assert results == {"call_0": "deleted access.log", renamed: "deleted errors.log"}
    for request in requests:  # every history sent is one the server accepts
        parse_body(request.content)


# Arbitrary replies (fuzz) -------------------------------------------------------------------

FUZZ_EXAMPLES = 100

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
paths = st.sampled_from(
    ["errors.log", "notes.txt", "../x", "/etc/passwd", "a\x00b", "x" * 5000, "\ud800", ""]
) | st.text(max_size=12)
arguments = st.one_of(
    paths.map(lambda p: json.dumps({"path": p})),
    json_values.map(json.dumps),  # any JSON type, sent as a string
    st.text(max_size=20),  # not JSON
    json_values,  # not even a string
)
tool_names = st.sampled_from(["list_files", "read_file", "delete_file", "drop_table"]) | st.text(
    max_size=6
)
call_ids = st.sampled_from(["call_0", "call_1", "c1", ""]) | st.none() | st.integers()
tool_call = st.fixed_dictionaries(
    {
        "id": call_ids,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": tool_names, "arguments": arguments}),
    }
)
message = st.fixed_dictionaries(
    {
        "role": st.just("assistant"),
        "content": st.none() | st.text(max_size=20) | st.just("\ud800 " + "y" * 200_000),
        "tool_calls": st.lists(tool_call, max_size=3)
        | st.lists(tool_call, min_size=20, max_size=40),
    }
)
finish = st.sampled_from(["stop", "tool_calls", "length", "content_filter"]) | st.text(max_size=4)
valid = st.builds(completion, message, finish)
bodies = st.one_of(
    valid,
    st.just({"choices": []}),
    json_values,
    st.text(max_size=30),  # not JSON at all
)
statuses = st.sampled_from([200] * 12 + [400, 429, 500])
# Well-formed replies first, so runs get deep, then anything at all (repeated from then on).
fuzz_answers = st.builds(
    lambda good, last: [*good, last],
    st.lists(st.tuples(st.just(200), valid), max_size=4),
    st.tuples(statuses, bodies),
)


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(
    answers=fuzz_answers,
    limits=st.sampled_from([{"max_turns": 4}, {"max_turns": 10, "max_total_tokens": 45}]),
)
def test_any_reply_ends_in_an_exit_with_the_state_saved(
    answers: list[Answer], limits: dict[str, int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        ws = create_workspace(Path(folder) / "workspace")
        recorder = Recorder(state_dir=Path(folder) / "states")
        tools = [t for t in default_tools() if t.name != "scan_archive"]  # fast tools only
        state = asyncio.run(drive(answers, ws, tools=tools, recorder=recorder, **limits))
        assert state.status in EXITS
        assert load(Path(folder) / "states", state.run_id) == state
    ids = [c.id for c in asked_calls(state)]
    assert len(ids) == len(set(ids)) and all(ids)
    body = {"model": "m", "messages": state.messages}
    parse_body(json.dumps(body).encode())  # a history the server accepts
