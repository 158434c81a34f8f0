"""The chapter's measurements, reproduced through the real harness over real HTTP.

Each experiment is a function taking the scripted provider's base URL (and a scratch folder)
and returning its figures plus a Markdown table; ``run_all`` starts scripted servers in this
process (on free loopback ports), runs every experiment and writes ``results/experiments.md``
and ``results/experiments.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from harness.approvals import approve, reject
from harness.cancel import CancelToken
from harness.client import ProviderClient, RetryPolicy
from harness.config import LoopConfig
from harness.execute import idempotency_key
from harness.loop import SYSTEM_PROMPT, run_loop
from harness.persist import load
from harness.scenarios import SCENARIO_TASKS
from harness.state import RunState, asked_calls, new_run
from harness.subagent import research_tool
from harness.tools import Tool, ToolContext, default_tools
from harness.trace import Recorder
from harness.workspace import Workspace, create_workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server

FAST_RETRY = RetryPolicy(max_retries=4, base_delay_s=0.05, max_delay_s=0.2)


@dataclass
class Result:
    name: str
    title: str
    shows: str  # one sentence: what the table shows
    table: list[dict[str, Any]]
    figures: dict[str, Any] = field(default_factory=dict)

    def markdown(self) -> str:
        if not self.table:
            return ""
        head = list(self.table[0])
        lines = [
            f"## {self.title}",
            "",
            self.shows,
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for row in self.table:
            lines.append("| " + " | ".join(_cell(row.get(k)) for k in head) + " |")
        if self.figures:
            lines += ["", ", ".join(f"{k} = {_cell(v)}" for k, v in self.figures.items())]
        return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6f}" if abs(value) < 1 else f"{value:,.2f}"
    if isinstance(value, str):
        return value.replace("|", "\\|").replace("\n", " ")
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


@dataclass
class Env:
    url: str  # zero-latency scripted server
    scratch: Path
    latency_urls: dict[int, str] = field(default_factory=dict)


async def drive(
    env: Env,
    model: str,
    *,
    url: str | None = None,
    task: str | None = None,
    state: RunState | None = None,
    tools: list[Tool] | None = None,
    workspace: Workspace | None = None,
    recorder: Recorder | None = None,
    cancel: CancelToken | None = None,
    **config: Any,
) -> tuple[RunState, Workspace]:
    scenario = model.removeprefix("scripted:").split("+")[0]
    state = state or new_run(model, task or SCENARIO_TASKS[scenario], system=SYSTEM_PROMPT)
    workspace = workspace or create_workspace(env.scratch / state.run_id)
    async with ProviderClient(url or env.url, retry=FAST_RETRY) as client:
        await run_loop(
            state,
            client,
            tools or default_tools(),
            workspace,
            LoopConfig(**config),
            recorder,
            cancel,
        )
    return state, workspace


def row(label: str, s: RunState, **extra: Any) -> dict[str, Any]:
    return {
        "run": label,
        "turns": s.turns,
        "tools": s.tool_runs,
        "in": s.prompt_tokens,
        "out": s.completion_tokens,
        "cost": round(s.cost_usd, 6),
        "status": s.status,
        **extra,
    }


async def exp_plan(env: Env) -> Result:
    s, _ = await drive(env, "scripted:plan")
    return Result(
        "plan",
        "1. The plan run",
        "A well-behaved task: three turns, two tool runs; "
        "every turn resends all before it, so prompt tokens grow turn by turn.",
        [
            row(
                "plan, cap 20",
                s,
                ms=round(s.wall_ms),
                answer=s.answer,
                per_turn_prompt_tokens=s.per_turn_prompt_tokens,
            )
        ],
        {
            "turns": s.turns,
            "tool_runs": s.tool_runs,
            "cost_usd": s.cost_usd,
            "cost_is_arithmetic": s.cost_usd
            == s.prompt_tokens * 2e-6 + s.completion_tokens * 12e-6,
        },
    )


def _slope(values: list[int]) -> float:
    n = len(values)
    mx, my = (n - 1) / 2, sum(values) / n
    num = sum((i - mx) * (v - my) for i, v in enumerate(values))
    return num / sum((i - mx) ** 2 for i in range(n))


async def exp_caps(env: Env) -> Result:
    rows, costs = [], {}
    growth = 0.0
    for cap in (8, 20, 50, 100):
        s, _ = await drive(env, "scripted:runaway", max_turns=cap)
        costs[cap] = s.cost_usd
        growth = _slope(s.per_turn_prompt_tokens)
        rows.append(row(f"runaway, cap {cap}", s))
    ratio = costs[100] / costs[50]
    return Result(
        "caps",
        "2. Turn caps on a runaway",
        "Doubling the cap from 50 to 100 multiplies "
        "the bill by far more than two: each turn carries every turn before it, so the "
        "total grows with the square of the cap.",
        rows,
        {
            "cost_100_over_50": round(ratio, 3),
            "chapter_ratio": 3.7,
            "prompt_tokens_growth_per_turn": round(growth, 1),
        },
    )


async def exp_budgets(env: Env) -> Result:
    rows = []
    overshoots_ok = True
    for budget in (0.010, 0.050, 0.100):
        s, _ = await drive(env, "scripted:runaway", max_turns=None, max_budget_usd=budget)
        last = s.turn_records[-1].cost_usd - s.turn_records[-2].cost_usd
        over = s.cost_usd - budget
        overshoots_ok &= 0 <= over < last
        rows.append(
            {
                "budget": budget,
                "turns bought": s.turns,
                "spent": round(s.cost_usd, 6),
                "overshoot": round(over, 6),
                "last turn cost": round(last, 6),
                "status": s.status,
            }
        )
    return Result(
        "budgets",
        "3. Dollar budgets on a runaway, no turn cap",
        "The check runs "
        "before each call and a turn's price is known only after it: every budget is "
        "overshot, by less than one turn's cost.",
        rows,
        {"overshoot_below_one_turn": overshoots_ok},
    )


async def exp_policies(env: Env) -> Result:
    rows, costs = [], {}
    for policy in ("fatal", "generic", "descriptive"):
        s, _ = await drive(env, "scripted:recover", tool_errors=policy)
        costs[policy] = s.cost_usd
        rows.append(row(policy, s, answer=s.answer or ""))
    for r in rows:
        r["cost vs fatal"] = f"{costs[r['run']] / costs['fatal']:.1f}x"
    return Result(
        "policies",
        "4. Tool-error policies on `recover`",
        "Only the policy that "
        "passes the error's own sentence to the model gets an answer; it costs several "
        "times the fatal row.",
        rows,
        {
            "descriptive_over_fatal": round(costs["descriptive"] / costs["fatal"], 2),
            "chapter_ratio": 4.7,
        },
    )


async def exp_permanent(env: Env) -> Result:
    retried, _ = await drive(env, "scripted:denied", max_turns=12)
    stopped, _ = await drive(env, "scripted:denied", max_turns=12, stop_on_permanent_error=True)
    return Result(
        "permanent",
        "5. A permanently refused read",
        "Retrying a call that cannot "
        "succeed buys nothing but turns; stopping on a permanent error ends it at once "
        "with the reason.",
        [
            row("retried to cap 12", retried, answer=retried.answer or ""),
            row("stop on permanent error", stopped, answer=stopped.error or ""),
        ],
        {"retried_cost_over_stopped": round(retried.cost_usd / stopped.cost_usd, 1)},
    )


async def exp_duplicate(env: Env) -> Result:
    base, _ = await drive(env, "scripted:plan")
    dup, _ = await drive(env, "scripted:duplicate")
    dedup, _ = await drive(env, "scripted:duplicate", dedupe=True)
    rows = [
        row("baseline (plan)", base),
        row("duplicate call", dup),
        row("duplicate call, dedupe", dedup),
    ]
    for r, s in zip(rows, (base, dup, dedup), strict=True):
        r["cost delta"] = round(s.cost_usd - base.cost_usd, 6)
    return Result(
        "duplicate",
        "6. A duplicate call",
        "The repeated call costs a whole turn; "
        "dedupe saves the tool run, not the turn, because the model was already paid "
        "to ask.",
        rows,
        {
            "extra_cost_pct": round(100 * (dup.cost_usd / base.cost_usd - 1), 1),
            "dedupe_saves_tool_runs": dup.tool_runs - dedup.tool_runs,
            "dedupe_saves_turns": dup.turns - dedup.turns,
        },
    )


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
    state = new_run(model, SCENARIO_TASKS["double_delete"], system=SYSTEM_PROMPT)
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


async def exp_crash(env: Env) -> Result:
    folder = env.scratch / "crash"
    base = {**os.environ, "LLM_BASE_URL": env.url}
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--scenario",
        "plan",
        "--json",
        "--state-dir",
        str(folder),
    ]
    child = subprocess.run(
        cmd,
        env={**base, "LOOPBENCH_CRASH_AFTER_TURN": "2"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    run_id = next(p.stem for p in folder.glob("*.json"))
    restored = load(folder, run_id)
    before = [r.name for r in restored.tool_log]
    restored_row = {
        "run": "restored from disk",
        "turns": restored.turns,
        "cost": round(restored.cost_usd, 6),
        "messages": len(restored.messages),
        "status": restored.status,
        "tool runs so far": before,
    }
    resumed = subprocess.run(
        [sys.executable, "-m", "harness", "resume", run_id, "--json", "--state-dir", str(folder)],
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    final = load(folder, run_id)
    clean, _ = await drive(env, "scripted:plan")
    rows: list[dict[str, Any]] = [
        {
            "run": f"process killed after turn 2 (exit {child.returncode})",
            "turns": "",
            "cost": "",
            "messages": "",
            "status": "",
            "tool runs so far": "",
        },
        restored_row,
        {
            "run": f"resumed in a new process (exit {resumed.returncode})",
            "turns": final.turns,
            "cost": round(final.cost_usd, 6),
            "messages": len(final.messages),
            "status": final.status,
            "tool runs so far": [r.name for r in final.tool_log],
        },
        {
            "run": "uncrashed run",
            "turns": clean.turns,
            "cost": round(clean.cost_usd, 6),
            "messages": len(clean.messages),
            "status": clean.status,
            "tool runs so far": [r.name for r in clean.tool_log],
        },
    ]
    return Result(
        "crash",
        "9. Crash and resume",
        "A run killed with SIGKILL resumes from its "
        "state file: no turn is paid twice, no tool runs twice.",
        rows,
        {
            "killed_by_signal": child.returncode == -signal.SIGKILL,
            "same_cost": final.cost_usd == clean.cost_usd,
            "each_tool_once": [r.name for r in final.tool_log] == ["list_files", "read_file"],
        },
    )


async def _stop_at(env: Env, seconds: float | None, wired: bool) -> dict[str, Any]:
    token = CancelToken()
    lines: list[str] = []
    recorder = Recorder(on_progress=lambda _tool, label: lines.append(label))
    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.perf_counter())
        token.cancel("user pressed Stop")

    if seconds is not None:
        asyncio.get_running_loop().call_later(seconds, press)
    start = time.perf_counter()
    s, _ = await drive(
        env, "scripted:slow", recorder=recorder, cancel=token, cancel_reaches_tools=wired
    )
    end = time.perf_counter()
    label = (
        "no stop"
        if seconds is None
        else f"stop at {seconds} s, token {'in the tool' if wired else 'only in the HTTP call'}"
    )
    return {
        "run": label,
        "ran ms": round((end - start) * 1000),
        "stopped ms after the click": round((end - pressed[0]) * 1000, 2) if pressed else "",
        "status": s.status,
        "progress lines": len(lines),
        "reason": (s.interruption or {}).get("reason", ""),
    }


async def exp_cancel(env: Env) -> Result:
    rows = [
        await _stop_at(env, None, True),
        await _stop_at(env, 1.2, True),
        await _stop_at(env, 1.2, False),
    ]
    return Result(
        "cancel",
        "10. Cancellation during a 3-second tool",
        "A Stop that reaches the "
        "tool ends the run within milliseconds; one wired only into the HTTP call "
        "waits for the tool to finish.",
        rows,
        {
            "wired_stop_ms": rows[1]["stopped ms after the click"],
            "unwired_stop_ms": rows[2]["stopped ms after the click"],
        },
    )


async def exp_latency(env: Env) -> Result:
    rows = []
    for latency, url in sorted(env.latency_urls.items()):
        await drive(env, "scripted:plan", url=url)  # warm: connections, tokenizer tables
        s, _ = await drive(env, "scripted:plan", url=url)
        harness_ms = s.harness_ms
        rows.append(
            {
                "provider latency ms": latency,
                "wall ms": round(s.wall_ms, 1),
                "model ms": round(s.model_ms, 1),
                "tool ms": round(s.tool_ms, 1),
                "harness ms": round(harness_ms, 1),
                "harness share": f"{100 * harness_ms / s.wall_ms:.1f}%",
            }
        )
    return Result(
        "latency",
        "11. Provider latency",
        "The provider's latency is the wall time; "
        "the harness's own share is a few milliseconds and shrinks as the model slows.",
        rows,
    )


async def exp_subagent(env: Env) -> Result:
    tools = [*default_tools(), research_tool(env.url, "scripted:runaway", LoopConfig(max_turns=5))]
    s, _ = await drive(env, "scripted:research", tools=tools, max_budget_usd=0.005)
    slow_url = env.latency_urls.get(50, env.url)
    token = CancelToken()
    asyncio.get_running_loop().call_later(0.25, token.cancel, "user pressed Stop")
    stopped_tools = [
        *default_tools(),
        research_tool(slow_url, "scripted:runaway", LoopConfig(max_turns=50)),
    ]
    c, _ = await drive(env, "scripted:research", url=slow_url, tools=stopped_tools, cancel=token)
    rows = [
        {
            "run": "child runs away, cap 5",
            "parent turns": s.turns,
            "parent status": s.status,
            "parent cost": round(s.cost_usd, 6),
            "child cost": round(s.child_cost_usd, 6),
            "parent budget": 0.005,
            "answer": s.answer,
        },
        {
            "run": "Stop pressed during the child",
            "parent turns": c.turns,
            "parent status": c.status,
            "parent cost": round(c.cost_usd, 6),
            "child cost": round(c.child_cost_usd, 6),
            "parent budget": "",
            "answer": json.dumps(c.interruption),
        },
    ]
    return Result(
        "subagent",
        "12. A subagent as a tool",
        "The child stops at its own cap and is "
        "billed apart, so the parent's budget is untouched; one Stop cancels both.",
        rows,
        {
            "child_stopped_at_cap": "after 5 turns" in (s.answer or ""),
            "parent_within_budget": s.status == "completed",
        },
    )


async def exp_finish(env: Env) -> Result:
    rows = []
    for label, model in [
        ("reply cut by max_tokens", "scripted:plan+trunc@2"),
        ("refusal", "scripted:plan+refuse@1"),
        ("429 with retry-after", "scripted:plan+429x1@1"),
        ("500 burst of 3", "scripted:plan+500x3@1"),
        ("500 forever", "scripted:plan+500x999@1"),
    ]:
        s, _ = await drive(env, model)
        rows.append(
            {
                "run": label,
                "status": s.status,
                "turns": s.turns,
                "retries": sum(t.retries for t in s.turn_records),
                "cost": round(s.cost_usd, 6),
                "what the loop did": s.error or s.refusal or s.answer or "",
            }
        )
    return Result(
        "finish",
        "13. Finish reasons and provider faults",
        "A truncated reply is "
        "finished, not dropped; a refusal stops at once; transient errors are retried "
        "within a bound and cost nothing extra.",
        rows,
    )


Experiment = Callable[[Env], Awaitable[Result]]
EXPERIMENTS: dict[str, Experiment] = {
    "plan": exp_plan,
    "caps": exp_caps,
    "budgets": exp_budgets,
    "policies": exp_policies,
    "permanent": exp_permanent,
    "duplicate": exp_duplicate,
    "writes": exp_writes,
    "approval": exp_approval,
    "crash": exp_crash,
    "cancel": exp_cancel,
    "latency": exp_latency,
    "subagent": exp_subagent,
    "finish": exp_finish,
}
LATENCIES = (0, 50, 200, 1000)


async def run_experiments(names: list[str], echo: Callable[[str], None] = print) -> list[Result]:
    from contextlib import ExitStack

    results = []
    with tempfile.TemporaryDirectory(prefix="loopbench-exp-") as scratch, ExitStack() as stack:
        urls = {
            ms: stack.enter_context(running_server(create_app(ScriptedBackend(ms))))
            for ms in LATENCIES
        }
        env = Env(url=urls[0], scratch=Path(scratch), latency_urls=urls)
        for url in urls.values():  # the first request of a server loads the BPE tables
            httpx.get(f"{url}/models", timeout=10)
            httpx.post(
                f"{url}/chat/completions",
                timeout=30,
                json={"model": "scripted:plan", "messages": [{"role": "user", "content": "warm"}]},
            )
        for name in names:
            started = time.perf_counter()
            result = await EXPERIMENTS[name](env)
            echo(f"{name}: {time.perf_counter() - started:.1f} s")
            results.append(result)
    return results


def write(results: list[Result], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    intro = (
        "# Experiments\n\nThe chapter's measurements, rerun through this harness against "
        "the scripted provider over real HTTP (`make experiments`). Absolute token counts "
        "differ from the chapter's (our system prompt, tool schemas and files are our own); "
        "the shapes and ratios are the point.\n\n"
    )
    (folder / "experiments.md").write_text(intro + "\n".join(r.markdown() for r in results))
    data = {r.name: {"title": r.title, "table": r.table, "figures": r.figures} for r in results}
    (folder / "experiments.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
