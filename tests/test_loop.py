"""The bare loop against the scripted provider over real HTTP."""

from __future__ import annotations

from pathlib import Path

from harness.client import ProviderClient
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.prices import Prices
from harness.scenarios import SCENARIO_TASKS
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.workspace import Workspace


async def run_scenario(url: str, name: str, ws: Workspace, **config: object) -> RunState:
    state = new_run(f"scripted:{name}", SCENARIO_TASKS[name], system=SYSTEM_PROMPT)
    async with ProviderClient(url) as client:
        return await run_loop(state, client, Setup(default_tools(), ws), LoopConfig.of(**config))  # type: ignore[arg-type]


async def test_plan_completes_in_three_turns_and_two_tool_runs(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run_scenario(scripted_url, "plan", workspace)
    assert (state.status, state.turns, state.tool_runs) == ("completed", 3, 2)
    assert state.answer == "errors.log mentions a timeout: worker 7 timed out after 30000 ms."
    assert state.cost_usd == state.prompt_tokens * 2e-6 + state.completion_tokens * 12e-6
    per_turn = state.per_turn_prompt_tokens
    assert len(per_turn) == 3 and per_turn[0] < per_turn[1] < per_turn[2]
    assert sum(per_turn) == state.prompt_tokens
    roles = [m["role"] for m in state.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m["tool_call_id"] for m in state.messages if m["role"] == "tool"] == ["c1", "c2"]
    assert "worker 7 timed out" in state.messages[5]["content"]


async def test_prices_are_configurable(scripted_url: str, workspace: Workspace) -> None:
    state = await run_scenario(scripted_url, "plan", workspace, prices=Prices(1.0, 1.0))
    assert state.cost_usd == (state.prompt_tokens + state.completion_tokens) / 1e6


async def test_turn_cap_stops_a_runaway(scripted_url: str, workspace: Workspace) -> None:
    state = await run_scenario(scripted_url, "runaway", workspace, max_turns=5)
    assert (state.status, state.turns, state.tool_runs) == ("max_turns_exceeded", 5, 5)
    assert state.interruption == {"type": "max_turns"}
    assert state.answer is None


async def test_tool_errors_go_back_to_the_model(scripted_url: str, workspace: Workspace) -> None:
    state = await run_scenario(scripted_url, "recover", workspace)
    first_result = state.messages[3]
    assert first_result["role"] == "tool" and first_result["tool_call_id"] == "c1"
    assert first_result["content"].startswith("Error: no such file: timeout.log")
    assert (state.status, state.answer) == ("completed", "errors.log mentions a timeout.")


async def test_unknown_tool_and_bad_arguments_do_not_kill_the_loop(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run_scenario(scripted_url, "malformed", workspace)
    results = {m["tool_call_id"]: m["content"] for m in state.messages if m["role"] == "tool"}
    assert "no tool named 'drop_database'" in results["c1"]
    assert "list_files, read_file" in results["c1"]
    assert "not valid JSON" in results["c2"]
    assert state.tool_runs == 0
    assert (state.status, state.turns) == ("completed", 2)


async def test_refused_path_is_read_back_to_the_model(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run_scenario(scripted_url, "denied", workspace, max_turns=3)
    results = [m["content"] for m in state.messages if m["role"] == "tool"]
    assert len(results) == 3 and all("outside the workspace" in r for r in results)
    assert state.status == "max_turns_exceeded"


async def test_unreachable_provider_fails_the_run_with_a_clear_error(tmp_path: Path) -> None:
    from harness.workspace import create_workspace

    state = new_run("scripted:plan", "q")
    async with ProviderClient("http://127.0.0.1:9/v1") as client:
        await run_loop(state, client, Setup(default_tools(), create_workspace(tmp_path)))
    assert state.status == "failed"
    assert state.error is not None
    assert "http://127.0.0.1:9/v1" in state.error and "make serve-local" in state.error
    assert state.turns == 0 and state.cost_usd == 0


async def test_budget_stops_with_at_most_one_turn_of_overshoot(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run_scenario(
        scripted_url, "runaway", workspace, max_turns=None, max_budget_usd=0.01
    )
    assert (state.status, state.interruption) == ("budget_exceeded", {"type": "max_budget"})
    last_turn_cost = state.turn_records[-1].cost_usd - state.turn_records[-2].cost_usd
    assert 0.01 <= state.cost_usd < 0.01 + last_turn_cost
    assert state.turn_records[-2].cost_usd < 0.01


async def test_tool_error_policies_on_recover(scripted_url: str, workspace: Workspace) -> None:
    fatal = await run_scenario(scripted_url, "recover", workspace, tool_errors="fatal")
    assert (fatal.status, fatal.turns, fatal.answer) == ("failed", 1, None)
    assert fatal.error is not None and "timeout.log" in fatal.error
    generic = await run_scenario(scripted_url, "recover", workspace, tool_errors="generic")
    assert generic.messages[3]["content"] == "Error: the tool call failed."
    assert generic.answer == "I could not read the file, so I do not know."
    descriptive = await run_scenario(scripted_url, "recover", workspace)
    assert descriptive.answer == "errors.log mentions a timeout."
    assert descriptive.cost_usd > generic.cost_usd > fatal.cost_usd


async def test_a_call_that_needs_approval_stops_the_run(
    scripted_url: str, workspace: Workspace
) -> None:
    state = await run_scenario(scripted_url, "destructive", workspace)
    assert state.status == "interrupted"
    assert state.interruption == {
        "type": "approval",
        "call_id": "c2",
        "tool_name": "delete_file",
        "args": '{"path": "access.log"}',
    }
    assert (workspace.root / "access.log").exists()
    assert state.turns == 2


async def test_a_huge_file_reaches_the_model_cut_to_the_read_cap(
    scripted_url: str, workspace: Workspace, tmp_path: Path
) -> None:
    """The plan scenario reads errors.log; a 20 MB errors.log reaches the transcript and the
    trace cut, with the cut said where the model reads it."""
    from harness.tools import READ_CAP_BYTES
    from harness.trace import Recorder

    line = "2026-03-02 10:15:41 ERROR worker 7 timed out after 30000 ms\n"
    (workspace.root / "errors.log").write_text(line * (20 * 1024 * 1024 // len(line)))
    trace = tmp_path / "trace.jsonl"
    state = new_run("scripted:plan", SCENARIO_TASKS["plan"], system=SYSTEM_PROMPT)
    async with ProviderClient(scripted_url) as client:
        state = await run_loop(
            state,
            client,
            Setup(default_tools(), workspace),
            LoopConfig(),
            Recorder(trace_path=trace),
        )
    read = next(m["content"] for m in state.messages if m.get("tool_call_id") == "c2")
    assert len(read.encode()) < READ_CAP_BYTES + 200 and "[cut: errors.log is" in read
    assert trace.stat().st_size < 3 * READ_CAP_BYTES
    assert state.status == "completed"


async def test_every_tool_result_is_cut_to_the_loop_cap_and_the_trace_says_so(
    scripted_url: str, workspace: Workspace, tmp_path: Path
) -> None:
    """A tool that returns 1 MB (the slow scenario calls scan_archive) is read by the model cut
    to the loop's cap, whatever the tool; the trace records the cut."""
    import json
    from dataclasses import replace

    from harness.trace import Recorder

    async def flood(_: dict[str, object], __: object) -> str:
        return "entry ok\n" * 120_000

    tools = [replace(t, fn=flood) if t.name == "scan_archive" else t for t in default_tools()]
    trace = tmp_path / "trace.jsonl"
    state = new_run("scripted:slow", SCENARIO_TASKS["slow"], system=SYSTEM_PROMPT)
    config = LoopConfig(tool_result_cap_bytes=4096)
    async with ProviderClient(scripted_url) as client:
        state = await run_loop(
            state, client, Setup(tools, workspace), config, Recorder(trace_path=trace)
        )  # type: ignore[arg-type]
    result = next(m["content"] for m in state.messages if m["role"] == "tool")
    assert result.startswith("entry ok\n") and len(result.encode()) < 4096 + 100
    assert result.endswith("[cut: the result was 1080000 bytes; only the first 4096 are shown]")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    cut = [e["cut"] for e in events if e["type"] == "tool_result" and "cut" in e]
    assert cut == [{"bytes": 1080000, "kept_bytes": 4096}]
