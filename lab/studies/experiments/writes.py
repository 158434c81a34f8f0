"""Writes: a cache on a write tool, and approvals of a deletion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.approvals import approve, reject
from harness.execute import idempotency_key
from harness.scenarios import SCENARIO_TASKS
from harness.state import RunState, asked_calls, new_run
from harness.tools import Tool, ToolContext, default_tools
from harness.workspace import Workspace, create_workspace
from lab.studies.experiments.common import Env, Result, drive


def _deletions(s: RunState) -> int:
    return sum(1 for r in s.tool_log if r.name == "delete_file" and r.ran and r.ok)


def _logger_tool(workspace: Workspace) -> Tool:
    """delete_file, with the application's logger writing a fresh access.log right after."""
    inner = next(t for t in default_tools() if t.name == "delete_file")

    async def delete_then_log(args: dict[str, Any], ctx: ToolContext) -> str:
        result = await inner.run(args, ctx)
        (workspace.root / "access.log").write_text("new requests\n")
        return result

    return Tool(
        "delete_file",
        inner.description,
        inner.parameters,
        delete_then_log,
        read_only=False,
        needs_approval=True,
    )


async def _approve_all(env: Env, model: str, **config: Any) -> tuple[RunState, Workspace]:
    state = new_run(model, SCENARIO_TASKS["double_delete"])
    workspace = create_workspace(env.scratch / state.run_id)
    tools = [t for t in default_tools() if t.name != "delete_file"] + [_logger_tool(workspace)]
    await drive(env, model, state=state, tools=tools, workspace=workspace, **config)
    while state.interruption and state.interruption.get("type") == "approval":
        approve(state, state.interruption["call_id"])
        await drive(env, model, state=state, tools=tools, workspace=workspace, **config)
    return state, workspace


async def exp_writes(env: Env) -> Result:
    naive, _ = await _approve_all(env, "scripted:double_delete", dedupe=True, dedupe_all=True)
    gate, _ = await _approve_all(env, "scripted:double_delete", dedupe=True)
    keyed, ws = await _approve_all(env, "scripted:double_delete", dedupe=True)
    c2 = next(c for c in asked_calls(keyed) if c.id == "c2")
    replay = ToolContext(workspace=ws, idempotency_key=idempotency_key(keyed, c2))
    delete = next(t for t in default_tools() if t.name == "delete_file")
    (ws.root / "access.log").write_text("written after the run\n")
    await delete.run({"path": "access.log"}, replay)  # the same logical call, replayed
    replayed_deleted = not (ws.root / "access.log").exists()
    rows = [
        {
            "run": "naive cache on every tool",
            "turns": naive.turns,
            "tool runs": naive.tool_runs,
            "files deleted": _deletions(naive),
        },
        {
            "run": "cache on read-only tools only",
            "turns": gate.turns,
            "tool runs": gate.tool_runs,
            "files deleted": _deletions(gate),
        },
        {
            "run": "read-only gate + idempotency key, call c2 replayed",
            "turns": keyed.turns,
            "tool runs": keyed.tool_runs,
            "files deleted": _deletions(keyed) + int(replayed_deleted),
        },
    ]
    return Result(
        "writes",
        "7. A cache on a write tool",
        "Two deliberate deletions carry two "
        "call ids; a cache keyed on arguments swallows the second, the read-only gate "
        "runs both, and the idempotency key stops only a true replay.",
        rows,
        {
            "naive_deletions": _deletions(naive),
            "gate_deletions": _deletions(gate),
            "replay_deleted_again": replayed_deleted,
        },
    )


async def exp_approval(env: Env) -> Result:
    rows: list[dict[str, Any]] = []
    first, _ = await drive(env, "scripted:destructive")
    assert first.interruption is not None
    stop_row = {
        "run": "stopped",
        "turn": first.turns,
        "call": f"{first.interruption['tool_name']}({first.interruption['args']})",
        "deleted": [],
        "final words": "",
    }
    rows.append(stop_row)

    async def decide(label: str, decision: Callable[[RunState], None]) -> None:
        state, ws = await drive(env, "scripted:destructive")
        decision(state)
        await drive(env, "scripted:destructive", state=state, workspace=ws)
        deleted = [n for n in ("access.log",) if not (ws.root / n).exists()]
        rows.append(
            {
                "run": label,
                "turn": state.turns,
                "call": "delete_file",
                "deleted": deleted,
                "final words": state.answer,
            }
        )

    def raw_empty(state: RunState) -> None:
        # What a harness does when it writes nothing for a declined call.
        state.messages.append({"role": "tool", "tool_call_id": "c2", "content": ""})

    await decide("approve", lambda s: approve(s, "c2"))
    await decide("reject with a reason", lambda s: reject(s, "c2", "keep it for the audit"))
    await decide("reject, nothing said (harness default)", lambda s: reject(s, "c2", ""))
    await decide("reject, empty result written (raw)", raw_empty)
    return Result(
        "approval",
        "8. Approval on `destructive`",
        "A rejection left unwritten reads "
        "as success: the agent then claims a deletion that never happened; the "
        "harness always writes the decision in words.",
        rows,
        {"raw_empty_claims_deletion": str(rows[-1]["final words"]).startswith("Deleted")},
    )
