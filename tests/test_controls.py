"""The loop's controls against the scripted provider over real HTTP: status, trace, state file,
workspace."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.approvals import NotPending, approve, reject
from harness.cancel import CancelToken
from harness.client import ProviderClient, RetryPolicy
from harness.config import LoopConfig
from harness.errors import ToolError
from harness.loop import SYSTEM_PROMPT, run_loop
from harness.persist import StateFileError, load, save
from harness.replies import FINISH_BRIEFLY
from harness.scenarios import SCENARIO_TASKS
from harness.setup import Setup
from harness.state import SCHEMA_VERSION, RunState, new_run
from harness.subagent import research_tool
from harness.tools import Tool, ToolContext, default_tools
from harness.trace import EVENT_TYPES, Recorder
from harness.workspace import Workspace, create_workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from tests.helpers import run_harness

FAST_RETRY = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)


async def run(
    url: str,
    model: str,
    ws: Workspace,
    *,
    task: str | None = None,
    tools: list[Tool] | None = None,
    state: RunState | None = None,
    recorder: Recorder | None = None,
    cancel: CancelToken | None = None,
    **config: Any,
) -> RunState:
    scenario = model.removeprefix("scripted:").split("+")[0]
    state = state or new_run(model, task or SCENARIO_TASKS[scenario], system=SYSTEM_PROMPT)
    async with ProviderClient(url, retry=FAST_RETRY) as client:
        return await run_loop(
            state,
            client,
            Setup(tools or default_tools(), ws),
            LoopConfig.of(**config),
            recorder,
            cancel,
        )


@pytest.fixture(scope="module")
def slow_url() -> Iterator[str]:
    with running_server(create_app(ScriptedBackend(latency_ms=200))) as url:
        yield url


# 1. Run state -----------------------------------------------------------------------------


async def test_state_is_saved_after_every_step_and_loads_back(
    scripted_url: str, workspace: Workspace, tmp_path: Path
) -> None:
    recorder = Recorder(state_dir=tmp_path / "states")
    state = await run(scripted_url, "scripted:plan", workspace, recorder=recorder)
    loaded = load(tmp_path / "states", state.run_id)
    assert loaded == state
    # Written in one pass of the encoder, the same text as the dataclasses' own dict gives.
    saved = (tmp_path / "states" / f"{state.run_id}.json").read_text(encoding="utf-8")
    assert state.turn_records and state.tool_log
    assert saved == json.dumps(state.to_dict(), ensure_ascii=False)
    assert loaded.schema_version == SCHEMA_VERSION
    assert [t.prompt_tokens for t in loaded.turn_records] == state.per_turn_prompt_tokens


def test_corrupt_state_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "abc.json").write_text('{"run_id": "abc", "messa')
    with pytest.raises(StateFileError, match=r"abc\.json.*corrupt"):
        load(tmp_path, "abc")


def test_newer_schema_names_the_file(tmp_path: Path) -> None:
    state = new_run("m", "q", run_id="future")
    state.schema_version = SCHEMA_VERSION + 1
    save(state, tmp_path)
    with pytest.raises(StateFileError, match=r"future\.json.*newer"):
        load(tmp_path, "future")


def test_a_version_1_state_loads_with_approvals_keyed_by_call_position(tmp_path: Path) -> None:
    call = {"id": "c2", "type": "function", "function": {"name": "delete_file", "arguments": "{}"}}
    v1 = {
        "run_id": "old",
        "model": "scripted:destructive",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
        "approved": ["c2"],
        "rejected": {"c1": "no"},
        "schema_version": 1,
    }
    (tmp_path / "old.json").write_text(json.dumps(v1))
    state = load(tmp_path, "old")
    assert (state.approved, state.rejected) == (["2.0"], {"1.0": "no"})
    assert state.schema_version == SCHEMA_VERSION == 4


def test_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    save(new_run("m", "q", run_id="r1"), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1.json"]


# 2. Exits ---------------------------------------------------------------------------------


async def test_token_budget(scripted_url: str, workspace: Workspace) -> None:
    state = await run(
        scripted_url, "scripted:runaway", workspace, max_turns=None, max_total_tokens=2000
    )
    assert (state.status, state.interruption) == ("budget_exceeded", {"type": "max_tokens"})
    assert state.prompt_tokens + state.completion_tokens >= 2000


async def test_wall_clock_timeout_interrupts_a_slow_tool(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run(scripted_url, "scripted:slow", workspace, timeout_s=0.5)
    assert state.status == "interrupted"
    assert state.interruption is not None and state.interruption["type"] == "timeout"
    assert state.interruption["tool_stopped"] is True


async def test_conclude_on_limit_asks_once_more_without_tools(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run(
        scripted_url, "scripted:runaway", workspace, max_turns=3, conclude_on_limit=True
    )
    assert state.status == "max_turns_exceeded"
    assert state.turns == 4
    assert state.answer is not None and state.answer.startswith("I ran out of turns")
    assert "reached the max_turns limit" in state.messages[-2]["content"]


# 3. Finish reasons ------------------------------------------------------------------------


async def test_truncated_reply_is_kept_and_the_model_asked_to_finish(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run(scripted_url, "scripted:plan+trunc@2", workspace)
    assert state.status == "completed"
    partial = state.messages[-3]
    assert partial["role"] == "assistant" and partial["content"].startswith("errors.log men")
    assert state.messages[-2] == {"role": "user", "content": FINISH_BRIEFLY}
    assert [t.finish_reason for t in state.turn_records] == [
        "tool_calls",
        "tool_calls",
        "length",
        "stop",
    ]


async def test_with_finish_cut_replies_off_a_cut_reply_is_the_answer(
    scripted_url: str, workspace: Workspace
) -> None:
    """BFCL's inference ends a turn on any reply without a call: the loop can too."""
    state = await run(scripted_url, "scripted:plan+trunc@2", workspace, finish_cut_replies=False)
    assert state.status == "completed" and state.stop_reason == "length"
    assert state.messages[-1]["role"] == "assistant"
    assert state.answer is not None and state.answer.startswith("errors.log men")
    assert FINISH_BRIEFLY not in [m.get("content") for m in state.messages]
    assert [t.finish_reason for t in state.turn_records] == ["tool_calls", "tool_calls", "length"]


@pytest.mark.parametrize("fault", ["refuse", "filter"])
async def test_refusal_stops_at_once_and_is_recorded(
    scripted_url: str, workspace: Workspace, fault: str
) -> None:
    state = await run(scripted_url, f"scripted:plan+{fault}@0", workspace)
    assert (state.status, state.turns) == ("failed", 1)
    assert state.refusal
    assert state.error is not None and "refused" in state.error


# 4. Tool errors ---------------------------------------------------------------------------


async def test_permanent_error_can_stop_the_run(scripted_url: str, workspace: Workspace) -> None:
    retried = await run(scripted_url, "scripted:denied", workspace, max_turns=12)
    assert (retried.status, retried.turns, retried.tool_runs) == ("max_turns_exceeded", 12, 12)
    stopped = await run(
        scripted_url, "scripted:denied", workspace, max_turns=12, stop_on_permanent_error=True
    )
    assert (stopped.status, stopped.turns) == ("failed", 1)
    assert stopped.error is not None and "permanent" in stopped.error
    assert stopped.cost_usd < retried.cost_usd / 5


async def test_a_tool_that_hangs_times_out_into_an_error_result(
    scripted_url: str, workspace: Workspace
) -> None:
    async def hang(_: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.Event().wait()
        return "never"

    tools = [t for t in default_tools() if t.name != "list_files"]
    tools.append(Tool("list_files", "hangs", {"type": "object"}, hang, read_only=True))
    state = await run(scripted_url, "scripted:plan", workspace, tools=tools, tool_timeout_s=0.2)
    assert state.status == "completed"
    assert "did not finish within 0.2 s" in state.messages[3]["content"]


# 5. Dedupe --------------------------------------------------------------------------------


async def test_dedupe_saves_tool_runs_not_turns(scripted_url: str, workspace: Workspace) -> None:
    plain = await run(scripted_url, "scripted:duplicate", workspace)
    deduped = await run(scripted_url, "scripted:duplicate", workspace, dedupe=True)
    assert plain.turns == deduped.turns == 4
    assert (plain.tool_runs, deduped.tool_runs) == (3, 2)
    assert plain.cost_usd == deduped.cost_usd
    results = {m["tool_call_id"]: m["content"] for m in deduped.messages if m["role"] == "tool"}
    assert results["c3"] == results["c2"]
    assert deduped.tool_log[-1].cached and not deduped.tool_log[-1].ran


async def _approving_every_call(url: str, ws: Workspace, **config: Any) -> RunState:
    """double_delete with each deletion approved, and access.log written again in between."""
    state = await run(url, "scripted:double_delete", ws, **config)
    while state.interruption is not None and state.interruption["type"] == "approval":
        (ws.root / "access.log").write_text("written again by the logger\n")
        approve(state, state.interruption["call_id"])
        await run(url, "scripted:double_delete", ws, state=state, **config)
    return state


@pytest.mark.parametrize(("dedupe_all", "second_runs"), [(False, True), (True, False)])
async def test_dedupe_leaves_write_tools_alone_unless_told(
    scripted_url: str, tmp_path: Path, dedupe_all: bool, second_runs: bool
) -> None:
    ws = create_workspace(tmp_path / f"all-{dedupe_all}")
    state = await _approving_every_call(scripted_url, ws, dedupe=True, dedupe_all=dedupe_all)
    assert state.status == "completed"
    second = state.tool_log[-1]
    assert (second.name, second.ran, second.cached) == ("delete_file", second_runs, not second_runs)
    assert (ws.root / "access.log").exists() is not second_runs


# 6. Approvals -----------------------------------------------------------------------------


async def _stopped_at_approval(url: str, ws: Workspace) -> RunState:
    state = await run(url, "scripted:destructive", ws)
    assert state.status == "interrupted" and state.interruption is not None
    assert state.interruption["call_id"] == "c2"
    return state


async def test_approve_then_resume_deletes(scripted_url: str, workspace: Workspace) -> None:
    state = await _stopped_at_approval(scripted_url, workspace)
    approve(state, "c2")
    await run(scripted_url, "scripted:destructive", workspace, state=state)
    assert (state.status, state.turns) == ("completed", 3)
    assert not (workspace.root / "access.log").exists()
    assert state.answer == "Deleted access.log to free space."


@pytest.mark.parametrize("reason", ["keep it, I need it for the audit", ""])
async def test_reject_writes_the_decision_for_the_model(
    scripted_url: str, workspace: Workspace, reason: str
) -> None:
    state = await _stopped_at_approval(scripted_url, workspace)
    reject(state, "c2", reason)
    await run(scripted_url, "scripted:destructive", workspace, state=state)
    assert (workspace.root / "access.log").exists()
    result = next(m for m in state.messages if m.get("tool_call_id") == "c2")
    assert "declined" in result["content"] and reason in result["content"]
    assert state.answer == "I did not delete anything: you declined the deletion."


async def test_approving_a_call_that_is_not_pending(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await _stopped_at_approval(scripted_url, workspace)
    with pytest.raises(NotPending, match="c9"):
        approve(state, "c9")


# 7. Parallel calls ------------------------------------------------------------------------


async def test_calls_of_one_turn_run_together_and_answer_in_order(
    scripted_url: str, workspace: Workspace
) -> None:
    barrier = asyncio.Barrier(3)

    async def read_at_once(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            await asyncio.wait_for(barrier.wait(), timeout=10)
        except TimeoutError as exc:
            raise ToolError("the reads did not run together") from exc
        return (ctx.workspace.root / args["path"]).read_text()

    tools = [t for t in default_tools() if t.name != "read_file"]
    tools.append(Tool("read_file", "read", {"type": "object"}, read_at_once, read_only=True))
    state = await run(
        scripted_url, "scripted:oracle", workspace, tools=tools, task="Which file is the largest?"
    )
    assert state.status == "completed" and state.tool_runs == 4
    assert [m["tool_call_id"] for m in state.messages if m["role"] == "tool"] == [
        "c1",
        "c2",
        "c3",
        "c4",
    ]
    assert all(r.ok for r in state.tool_log)


async def test_an_approval_among_parallel_calls(scripted_url: str, workspace: Workspace) -> None:
    state = await run(scripted_url, "scripted:mixed", workspace)
    assert state.status == "interrupted" and state.interruption is not None
    assert state.interruption["call_id"] == "c2"
    assert [r.call_id for r in state.tool_log] == ["c1", "c3"]
    reject(state, "c2", "no")
    await run(scripted_url, "scripted:mixed", workspace, state=state)
    assert state.answer == "notes.txt says: Remember to rotate your logs."


# 9. Cancellation and progress -------------------------------------------------------------


async def test_cancellation_reaches_the_tool(
    scripted_url: str, workspace: Workspace, tmp_path: Path
) -> None:
    token = CancelToken()
    seen: list[str] = []

    def progress(tool: str, label: str) -> None:
        seen.append(label)
        token.cancel("user pressed Stop")

    recorder = Recorder(trace_path=tmp_path / "t.jsonl", on_progress=progress)
    state = await run(scripted_url, "scripted:slow", workspace, recorder=recorder, cancel=token)
    assert state.status == "interrupted"
    assert state.interruption == {
        "type": "cancelled",
        "reason": "user pressed Stop",
        "tool_name": "scan_archive",
        "tool_stopped": True,
    }
    assert seen == ["scanned 200 of 1200 files"]
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events if e["type"] == "tool_progress"] == ["tool_progress"]


async def test_a_tool_that_ignores_cancellation_still_stops_the_run(
    scripted_url: str, workspace: Workspace
) -> None:
    token = CancelToken()
    started = asyncio.Event()

    async def deaf(_: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await asyncio.Event().wait()  # never looks at ctx.cancel
        return "never"

    async def press_stop() -> None:
        await started.wait()
        token.cancel("user pressed Stop")

    tools = [t for t in default_tools() if t.name != "scan_archive"]
    tools.append(Tool("scan_archive", "deaf", {"type": "object"}, deaf, read_only=True))
    stopper = asyncio.create_task(press_stop())
    state = await run(
        scripted_url, "scripted:slow", workspace, tools=tools, cancel=token, cancel_grace_s=0.1
    )
    await stopper
    assert state.status == "interrupted" and state.interruption is not None
    assert state.interruption["tool_stopped"] is False


async def test_cancellation_reaches_the_provider_call(slow_url: str, workspace: Workspace) -> None:
    token = CancelToken()
    asyncio.get_running_loop().call_later(0.05, token.cancel, "user pressed Stop")
    state = await run(slow_url, "scripted:plan", workspace, cancel=token)
    assert state.status == "interrupted" and state.turns == 0
    assert state.interruption == {"type": "cancelled", "reason": "user pressed Stop"}


# 10. Provider faults ----------------------------------------------------------------------


async def test_429_then_200_is_retried(scripted_url: str, workspace: Workspace) -> None:
    state = await run(scripted_url, "scripted:plan+429x2@1", workspace)
    assert state.status == "completed"
    assert [t.retries for t in state.turn_records] == [0, 2, 0]


async def test_500_forever_gives_up_after_bounded_retries(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run(scripted_url, "scripted:plan+500x999", workspace)
    assert state.status == "failed" and state.turns == 0
    assert state.error is not None and "gave up after 3 retries" in state.error


async def test_401_is_not_retried(scripted_url: str, workspace: Workspace) -> None:
    """A refused key is no run's outcome: it ends the caller's work at once, unretried."""
    from harness.errors import KeyRefused

    with pytest.raises(KeyRefused, match="401") as refused:
        await run(scripted_url, "scripted:plan+401x999", workspace)
    assert "retries" not in str(refused.value) and "no key was sent" in str(refused.value)


async def test_malformed_provider_json_fails_the_run(workspace: Workspace) -> None:
    async def garbage(_: Any) -> PlainTextResponse:
        return PlainTextResponse("{not json", media_type="application/json")

    app = Starlette(routes=[Route("/v1/chat/completions", garbage, methods=["POST"])])
    with running_server(app) as url:  # type: ignore[arg-type]
        state = await run(url, "scripted:plan", workspace)
    assert state.status == "failed"
    assert state.error is not None and "not a chat completion" in state.error


# 11. Trace --------------------------------------------------------------------------------


async def test_trace_has_one_line_per_event(
    scripted_url: str, workspace: Workspace, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    state = await run(scripted_url, "scripted:plan", workspace, recorder=Recorder(trace_path=trace))
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert all(e["run_id"] == state.run_id and e["type"] in EVENT_TYPES for e in events)
    assert [e["type"] for e in events] == [
        "turn",
        "tool_start",
        "tool_result",
        "turn",
        "tool_start",
        "tool_result",
        "turn",
        "run_stopped",
    ]
    turns = [e for e in events if e["type"] == "turn"]
    assert [t["prompt_tokens"] for t in turns] == state.per_turn_prompt_tokens
    assert all(
        {"latency_ms", "finish_reason", "cost_usd", "completion_tokens"} <= set(t) for t in turns
    )
    assert turns[-1]["cost_usd"] == state.cost_usd
    assert events[-1]["status"] == "completed"


# 12. Subagent -----------------------------------------------------------------------------


async def test_subagent_runs_away_inside_its_own_limits(
    scripted_url: str, workspace: Workspace
) -> None:
    tools = [
        *default_tools(),
        research_tool(scripted_url, "scripted:runaway", LoopConfig.of(max_turns=5), api="openai"),
    ]
    state = await run(scripted_url, "scripted:research", workspace, tools=tools, max_budget_usd=1.0)
    assert state.status == "completed"
    assert "max_turns_exceeded after 5 turns" in (state.answer or "")
    assert state.child_cost_usd > 0
    assert state.turns == 2 and state.cost_usd < state.child_cost_usd
    summary = state.summary()
    assert summary["total_cost_usd"] == pytest.approx(state.cost_usd + state.child_cost_usd)


async def test_stop_cancels_parent_and_child(slow_url: str, workspace: Workspace) -> None:
    token = CancelToken()
    tools = [
        *default_tools(),
        research_tool(slow_url, "scripted:runaway", LoopConfig.of(max_turns=50), api="openai"),
    ]
    progress_seen = asyncio.Event()

    async def stop_when_child_works() -> None:
        while not workspace.root.exists():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.6)  # parent turn (200 ms) and a child turn or two
        progress_seen.set()
        token.cancel("user pressed Stop")

    stopper = asyncio.create_task(stop_when_child_works())
    state = await run(slow_url, "scripted:research", workspace, tools=tools, cancel=token)
    await stopper
    assert state.status == "interrupted"
    assert state.interruption is not None and state.interruption["reason"] == "user pressed Stop"
    assert state.child_cost_usd > 0
    assert state.turns == 1


# 8 and 13. Crash-resume and the CLI, as real processes --------------------------------------


def harness(
    *args: str, url: str, cwd: Path, crash_after: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"LOOPBENCH_CRASH_AFTER_TOOL": crash_after} if crash_after else None
    return run_harness(*args, url=url, cwd=cwd, env=env)


def test_kill_between_effect_and_save_then_resume_deletes_once(
    scripted_url: str, tmp_path: Path
) -> None:
    first = harness("run", "--scenario", "destructive", "--json", url=scripted_url, cwd=tmp_path)
    stopped = json.loads(first.stdout)
    assert stopped["interruption"]["call_id"] == "c2"
    run_id = stopped["run_id"]
    crashed = harness(
        "resume",
        run_id,
        "--approve",
        "c2",
        "--json",
        url=scripted_url,
        cwd=tmp_path,
        crash_after="delete_file",
    )
    assert crashed.returncode == -signal.SIGKILL
    workspace = tmp_path / "runs" / run_id / "workspace"
    assert not (workspace / "access.log").exists()
    (workspace / "access.log").write_text("a new access.log, created after the deletion")
    saved = load(tmp_path / "runs", run_id)
    # The deletion's result is unsaved; the approval names the call by turn and position.
    assert saved.tool_runs == 1 and saved.approved == ["2.0"]
    done = json.loads(harness("resume", run_id, "--json", url=scripted_url, cwd=tmp_path).stdout)
    assert done["status"] == "completed"
    assert (workspace / "access.log").read_text().startswith("a new access.log")
    ledger = json.loads((workspace / ".ledger.json").read_text())
    assert list(ledger) == [f"{run_id}:2.0"]
    uncrashed_dir = tmp_path / "clean"
    uncrashed_dir.mkdir()
    clean = json.loads(
        harness(
            "run", "--scenario", "destructive", "--json", url=scripted_url, cwd=uncrashed_dir
        ).stdout
    )
    clean = json.loads(
        harness(
            "resume",
            clean["run_id"],
            "--approve",
            "c2",
            "--json",
            url=scripted_url,
            cwd=uncrashed_dir,
        ).stdout
    )
    assert done["cost_usd"] == clean["cost_usd"]
    assert (done["turns"], done["tool_runs"]) == (clean["turns"], clean["tool_runs"])


def test_cli_resume_errors(scripted_url: str, tmp_path: Path) -> None:
    finished = json.loads(
        harness("run", "--scenario", "plan", "--json", url=scripted_url, cwd=tmp_path).stdout
    )
    again = harness("resume", finished["run_id"], url=scripted_url, cwd=tmp_path)
    assert again.returncode == 2 and "already finished" in again.stderr
    stopped = json.loads(
        harness("run", "--scenario", "destructive", "--json", url=scripted_url, cwd=tmp_path).stdout
    )
    wrong = harness("resume", stopped["run_id"], "--approve", "c7", url=scripted_url, cwd=tmp_path)
    assert wrong.returncode == 2 and "'c7' is not pending" in wrong.stderr
    (tmp_path / "runs" / "broken.json").write_text("{")
    broken = harness("show", "broken", url=scripted_url, cwd=tmp_path)
    assert broken.returncode == 2 and "broken.json" in broken.stderr


def test_cli_show_and_flags(scripted_url: str, tmp_path: Path) -> None:
    ran = json.loads(
        harness(
            "run", "--scenario", "duplicate", "--dedupe", "--json", url=scripted_url, cwd=tmp_path
        ).stdout
    )
    assert ran["tool_runs"] == 2
    shown = json.loads(
        harness("show", ran["run_id"], "--json", url=scripted_url, cwd=tmp_path).stdout
    )
    assert shown == ran
    trace = tmp_path / "runs" / f"{ran['run_id']}.trace.jsonl"
    assert trace.read_text().count('"type": "turn"') == 4
    budget = json.loads(
        harness(
            "run",
            "--scenario",
            "runaway",
            "--max-turns",
            "100",
            "--budget",
            "0.01",
            "--json",
            url=scripted_url,
            cwd=tmp_path,
        ).stdout
    )
    assert budget["status"] == "budget_exceeded"
