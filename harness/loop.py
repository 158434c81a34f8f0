"""The agent loop: ask the model, run the tools it asks for, stop at one of the exits."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.client import ModelReply, ProviderClient
from harness.errors import ProviderError
from harness.prices import Prices
from harness.state import RunState, Status, TurnRecord
from harness.toolrun import run_call, tool_message
from harness.tools import Tool, ToolContext
from harness.workspace import Workspace

SYSTEM_PROMPT = (
    "You are a careful assistant working in a folder of files. Use the tools to look at the "
    "files before you answer. When you know the answer, reply in one or two sentences."
)


@dataclass
class LoopConfig:
    max_turns: int = 20
    prices: Prices = field(default_factory=Prices)


def stop(state: RunState, status: Status, interruption: dict[str, Any] | None = None) -> RunState:
    state.status = status
    state.interruption = interruption
    return state


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


async def run_tools(
    state: RunState, calls: list[dict[str, Any]], tools: list[Tool], ctx: ToolContext
) -> None:
    by_name = {t.name: t for t in tools}
    for call in calls:
        outcome = await run_call(call, by_name, ctx)
        state.tool_runs += outcome.ran
        state.messages.append(tool_message(outcome))


async def run_loop(
    state: RunState,
    client: ProviderClient,
    tools: list[Tool],
    workspace: Workspace,
    config: LoopConfig | None = None,
) -> RunState:
    """Drive ``state`` until it stops; the state records why it stopped."""
    config = config or LoopConfig()
    specs = [t.spec() for t in tools]
    ctx = ToolContext(workspace=workspace)
    started = time.perf_counter()
    try:
        while True:
            if state.turns >= config.max_turns:
                return stop(state, "max_turns_exceeded", {"type": "max_turns"})
            try:
                reply = await client.chat(state.model, state.messages, specs)
            except ProviderError as exc:
                state.error = str(exc)
                return stop(state, "failed")
            record_turn(state, reply, config.prices)
            calls = reply.message.get("tool_calls") or []
            if not calls:
                state.answer = reply.message.get("content") or ""
                return stop(state, "completed")
            await run_tools(state, calls, tools, ctx)
    finally:
        state.wall_ms += (time.perf_counter() - started) * 1000
