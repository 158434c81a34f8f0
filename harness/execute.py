"""Answering the calls the model asked for: approvals, policies that answer a call without
running it (dedupe, the repeat guard), timeouts, cancellation.

Calls of one turn run concurrently. Each result is saved the moment its call finishes, so a
crash reruns only the calls still running; the transcript lists results in call order, one tool
message per call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import harness.hooks as hooks
from harness.cancel import Cancelled, CancelToken
from harness.config import LoopConfig
from harness.errors import Declined, InvalidArguments, ToolBug, ToolError, ToolServerFailed
from harness.faults import crash_point
from harness.state import (
    Call,
    Message,
    RunState,
    Status,
    ToolRun,
    last_reply,
    pending,
)
from harness.tool_errors import error_text, rejection_text
from harness.toolrun import ToolOutcome, capped, run_call, tool_message
from harness.tools import Tool, ToolContext
from harness.trace import Recorder
from harness.workspace import Workspace


@dataclass
class Stop:
    """Why answering the pending calls ended the run."""

    status: Status
    interruption: dict[str, Any] | None = None
    error: str | None = None


def record(
    state: RunState,
    outcome: ToolOutcome,
    content: str,
    recorder: Recorder,
    cap_bytes: int,
) -> None:
    """Save one answer the moment it exists, in call order, then trace it; an answer longer
    than ``cap_bytes`` is cut, and the trace says by how much."""
    call = outcome.call
    content, cut = capped(content, cap_bytes)
    if outcome.ran:
        crash_point("LOOPBENCH_CRASH_AFTER_TOOL", call.name)
    state.tool_runs += outcome.ran
    bug = isinstance(outcome.error, ToolBug)
    state.tool_log.append(
        ToolRun(
            turn=call.turn,
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            ok=outcome.error is None,
            ran=outcome.ran,
            ms=round(outcome.ms, 3),
            error=str(outcome.error) if outcome.error else None,
            cached=outcome.cached,
            repeated=outcome.repeated,
            bug=bug,
            invalid=isinstance(outcome.error, InvalidArguments),
            index=call.index,
            facts=outcome.facts,
        )
    )
    message = tool_message(call, content, is_error=outcome.error is not None)
    _insert_in_call_order(state, message, call.index)
    recorder.checkpoint(state)
    recorder.event(
        state,
        "tool_result",
        call_id=call.id,
        tool_name=call.name,
        ok=outcome.error is None,
        ran=outcome.ran,
        cached=outcome.cached,
        bug=bug,
        ms=round(outcome.ms, 3),
        content=content,
        **({"facts": outcome.facts} if outcome.facts else {}),
        **({"cut": cut} if cut else {}),
    )


def _insert_in_call_order(state: RunState, message: Message, index: int) -> None:
    """Results arrive as calls finish; the transcript lists them as the calls were asked."""
    last = last_reply(state)
    assert last is not None, "a tool result answers a call of the last reply"
    position = last[0]
    order = {c.get("id"): i for i, c in enumerate(state.messages[position].get("tool_calls", []))}
    at = position + 1
    while (
        at < len(state.messages)
        and state.messages[at]["role"] == "tool"
        and order.get(state.messages[at].get("tool_call_id"), -1) < index
    ):
        at += 1
    state.messages.insert(at, message)


def _reporter(recorder: Recorder, state: RunState, tool_name: str) -> Callable[[str], None]:
    def report(label: str) -> None:
        recorder.progress(state, tool_name, label)

    return report


class ToolDidNotStop(Exception):
    """The token fired and the tool kept running past its grace period."""


async def execute(
    call: Call, tools: dict[str, Tool], ctx: ToolContext, config: LoopConfig
) -> ToolOutcome:
    """Run one call under the per-tool timeout; Cancelled if the token fires."""
    task = asyncio.ensure_future(run_call(call, tools, ctx))
    waiter = asyncio.ensure_future(ctx.cancel.wait())
    try:
        await asyncio.wait(
            {task, waiter}, timeout=config.tool_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
    if task.done():
        return task.result()  # raises Cancelled if the tool honoured the token
    if ctx.cancel.cancelled:
        done, _ = await asyncio.wait({task}, timeout=config.cancel_grace_s)
        if done:
            return task.result()
        task.cancel()
        raise ToolDidNotStop(call.name)
    task.cancel()
    tool = tools.get(call.name)
    if tool is not None and tool.hang_is_fault:
        raise ToolServerFailed(
            f"the server behind {call.name} did not answer within {config.tool_timeout_s:g} s"
        )
    error = ToolError(
        f"{call.name} did not finish within {config.tool_timeout_s:g} s and was stopped"
    )
    return ToolOutcome(call, "", True, config.tool_timeout_s * 1000, error)


def judge(outcome: ToolOutcome, config: LoopConfig) -> tuple[str, Stop | None]:
    """What the model reads for this outcome, and whether the tool-error policy ends the run."""
    if outcome.error is None:
        return outcome.content, None
    name, error = outcome.call.name, outcome.error
    content = error_text(error, config.tool_errors, hooks.hints(config))
    if config.tool_errors == "fatal":
        return content, Stop("failed", error=f"tool {name} failed: {error}")
    if config.stop_on_permanent_error and error.permanent:
        return content, Stop("failed", error=f"permanent error from {name}: {error}")
    return content, None


@dataclass
class Batch:
    """The calls of one turn that run now, together; tool wall time is the batch's, not a sum."""

    state: RunState
    tools: dict[str, Tool]
    config: LoopConfig
    recorder: Recorder
    started: float = field(default_factory=time.perf_counter)
    base_ms: float = 0.0

    def __post_init__(self) -> None:
        self.base_ms = self.state.tool_wall_ms

    def charge_wall_time(self) -> None:
        self.state.tool_wall_ms = self.base_ms + (time.perf_counter() - self.started) * 1000

    async def run(self, call: Call, ctx: ToolContext) -> Stop | None:
        try:
            outcome = await execute(call, self.tools, ctx, self.config)
        finally:
            self.state.child_cost_usd += sum(ctx.child_costs)
            self.charge_wall_time()
        content, stop = judge(outcome, self.config)
        record(self.state, outcome, content, self.recorder, self.config.tool_result_cap_bytes)
        return stop


def _cancelled(name: str, result: BaseException, cancel: CancelToken) -> Stop:
    return Stop(
        "interrupted",
        {
            "type": "cancelled",
            "reason": cancel.reason or "cancelled",
            "tool_name": name,
            "tool_stopped": isinstance(result, Cancelled),
        },
    )


async def _settled(running: Awaitable[Stop | None]) -> Stop | BaseException | None:
    """One call's outcome, an exception returned as gather's ``return_exceptions`` returns it."""
    try:
        return await running
    except Exception as exc:  # sorted out below as gather's results are
        return exc


def idempotency_key(state: RunState, call: Call) -> str:
    """The same logical operation always carries the same key, whatever id the provider sent."""
    return f"{state.run_id}:{call.key}"


async def answer_pending(
    state: RunState,
    tools: dict[str, Tool],
    workspace: Workspace,
    config: LoopConfig,
    recorder: Recorder,
    cancel: CancelToken,
) -> Stop | None:
    """Answer every pending call; a Stop when the run cannot go on."""
    waiting: list[Call] = []
    runnable: list[tuple[Call, ToolContext]] = []
    for call in pending(state):
        tool = tools.get(call.name)
        if call.key in state.rejected:
            text = rejection_text(state.rejected[call.key])
            outcome = ToolOutcome(call, "", False, error=Declined(text))
            record(state, outcome, text, recorder, config.tool_result_cap_bytes)
        elif tool is not None and tool.needs_approval and call.key not in state.approved:
            waiting.append(call)
        elif (answered := hooks.answer_call(state, config, tools, call)) is not None:
            record(state, *answered, recorder, config.tool_result_cap_bytes)
        else:
            ctx = ToolContext(
                workspace=workspace,
                cancel=cancel if config.cancel_reaches_tools else CancelToken(),
                progress=_reporter(recorder, state, call.name),
                idempotency_key=idempotency_key(state, call),
                settings=config.settings,
                call_id=call.id,
            )
            recorder.event(
                state, "tool_start", call_id=call.id, tool_name=call.name, arguments=call.arguments
            )
            runnable.append((call, ctx))
    batch = Batch(state, tools, config, recorder)
    if any(t.in_order for t in (tools.get(c.name) for c, _ in runnable) if t is not None):
        results = [await _settled(batch.run(call, ctx)) for call, ctx in runnable]
    else:
        results = await asyncio.gather(
            *(batch.run(call, ctx) for call, ctx in runnable), return_exceptions=True
        )
    stop: Stop | None = None
    for (call, _), result in zip(runnable, results, strict=True):
        if isinstance(result, (Cancelled, ToolDidNotStop)):
            stop = stop or _cancelled(call.name, result, cancel)
        elif isinstance(result, BaseException):
            raise result
        else:
            stop = stop or result
    if stop is not None:
        return stop
    if waiting:
        call = waiting[0]
        interruption = {
            "type": "approval",
            "call_id": call.id,
            "tool_name": call.name,
            "args": call.arguments,
        }
        recorder.event(
            state,
            "approval_required",
            call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
        )
        return Stop("interrupted", interruption)
    return None
