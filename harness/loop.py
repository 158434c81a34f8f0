"""The agent loop: ask the model, run the tools it asks for, stop at one of the exits.

Exits, each recorded as data on the run state (``status`` and ``interruption``):

* ``completed``: the model answered without asking for a tool;
* ``failed``: the provider failed for good, or a tool failed under the ``fatal`` policy;
* ``max_turns_exceeded`` / ``budget_exceeded``: a limit was reached. Limits are checked at the
  top of every iteration, *before* the model is asked, and a turn's price is known only once
  it is over, so a dollar budget can be overshot by at most one turn's cost;
* ``interrupted``: a call needs a person's approval (``approve``/``reject`` then resume).

Every iteration first drains ``pending()`` calls (asked for but not yet answered), so resuming
a saved run and continuing after an approval are the same code path as the normal one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.client import ModelReply, ProviderClient
from harness.errors import ProviderError
from harness.policies import ToolErrorPolicy, error_text, rejection_text
from harness.prices import Prices
from harness.state import RunState, Status, ToolRun, TurnRecord, pending
from harness.toolrun import ToolOutcome, call_parts, run_call, tool_message
from harness.tools import Tool, ToolContext
from harness.workspace import Workspace

SYSTEM_PROMPT = (
    "You are a careful assistant working in a folder of files. Use the tools to look at the "
    "files before you answer. When you know the answer, reply in one or two sentences."
)


@dataclass
class LoopConfig:
    max_turns: int | None = 20
    max_budget_usd: float | None = None
    tool_errors: ToolErrorPolicy = "descriptive"
    prices: Prices = field(default_factory=Prices)


def stop(state: RunState, status: Status, interruption: dict[str, Any] | None = None) -> RunState:
    state.status = status
    state.interruption = interruption
    return state


def limit_reached(state: RunState, config: LoopConfig) -> tuple[Status, dict[str, Any]] | None:
    if config.max_turns is not None and state.turns >= config.max_turns:
        return "max_turns_exceeded", {"type": "max_turns"}
    if config.max_budget_usd is not None and state.cost_usd >= config.max_budget_usd:
        return "budget_exceeded", {"type": "max_budget"}
    return None


def record_turn(state: RunState, reply: ModelReply, prices: Prices) -> None:
    state.turns += 1
    state.prompt_tokens += reply.prompt_tokens
    state.completion_tokens += reply.completion_tokens
    state.cost_usd += prices.cost(reply.prompt_tokens, reply.completion_tokens)
    state.turn_records.append(
        TurnRecord(
            turn=state.turns,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency_ms=round(reply.latency_ms, 3),
            finish_reason=reply.finish_reason,
            cost_usd=state.cost_usd,
            timings=reply.timings,
        )
    )
    state.messages.append(reply.message)


def record_tool(state: RunState, outcome: ToolOutcome, content: str) -> None:
    state.tool_runs += outcome.ran
    state.tool_log.append(
        ToolRun(
            turn=state.turns,
            call_id=outcome.call_id,
            name=outcome.name,
            arguments=outcome.arguments,
            ok=outcome.error is None,
            ran=outcome.ran,
            ms=round(outcome.ms, 3),
            error=str(outcome.error) if outcome.error else None,
        )
    )
    state.messages.append(tool_message(outcome.call_id, outcome.name, content))


def needs_decision(call: dict[str, Any], tools: dict[str, Tool], state: RunState) -> bool:
    _, name, _ = call_parts(call)
    tool = tools.get(name)
    return bool(tool and tool.needs_approval and call["id"] not in state.approved)


def approval_interruption(call: dict[str, Any]) -> dict[str, Any]:
    call_id, name, arguments = call_parts(call)
    return {"type": "approval", "call_id": call_id, "tool_name": name, "args": arguments}


async def drain_pending(
    state: RunState, tools: dict[str, Tool], workspace: Workspace, config: LoopConfig
) -> bool:
    """Answer every pending call; True when the run had to stop while doing so."""
    waiting: list[dict[str, Any]] = []
    for call in pending(state):
        call_id, name, arguments = call_parts(call)
        if call_id in state.rejected:
            outcome = ToolOutcome(call_id, name, arguments, "", ran=False)
            record_tool(state, outcome, rejection_text(state.rejected[call_id]))
            continue
        if needs_decision(call, tools, state):
            waiting.append(call)
            continue
        ctx = ToolContext(workspace=workspace, idempotency_key=f"{state.run_id}:{call_id}")
        outcome = await run_call(call, tools, ctx)
        if outcome.error is not None and config.tool_errors == "fatal":
            record_tool(state, outcome, error_text(outcome.error, "descriptive"))
            state.error = f"tool {name} failed: {outcome.error}"
            stop(state, "failed")
            return True
        content = (
            outcome.content
            if outcome.error is None
            else error_text(outcome.error, config.tool_errors)
        )
        record_tool(state, outcome, content)
    if waiting:
        stop(state, "interrupted", approval_interruption(waiting[0]))
        return True
    return False


async def run_loop(
    state: RunState,
    client: ProviderClient,
    tools: list[Tool],
    workspace: Workspace,
    config: LoopConfig | None = None,
) -> RunState:
    """Drive ``state`` until it stops; the state records why it stopped."""
    config = config or LoopConfig()
    by_name = {t.name: t for t in tools}
    specs = [t.spec() for t in tools]
    state.status, state.interruption = "running", None
    started = time.perf_counter()
    try:
        while True:
            if await drain_pending(state, by_name, workspace, config):
                return state
            if limit := limit_reached(state, config):
                return stop(state, *limit)
            try:
                reply = await client.chat(state.model, state.messages, specs)
            except ProviderError as exc:
                state.error = str(exc)
                return stop(state, "failed")
            record_turn(state, reply, config.prices)
            if not reply.message.get("tool_calls"):
                state.answer = reply.message.get("content") or ""
                return stop(state, "completed")
    finally:
        state.wall_ms += (time.perf_counter() - started) * 1000
