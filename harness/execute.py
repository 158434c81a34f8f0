"""Answering the calls the model asked for: approvals, dedupe, timeouts, cancellation.

Calls of one turn run concurrently; their results go into the transcript in call order, one
tool message per call id, and the state is saved after each.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.cancel import Cancelled, CancelToken
from harness.config import LoopConfig
from harness.errors import ToolError
from harness.faults import crash_point
from harness.policies import error_text, rejection_text
from harness.state import RunState, Status, ToolRun, pending
from harness.toolrun import ToolOutcome, call_parts, run_call, tool_message
from harness.tools import Tool, ToolContext
from harness.trace import Recorder
from harness.workspace import Workspace


@dataclass
class Stop:
    """Why answering the pending calls ended the run."""

    status: Status
    interruption: dict[str, Any] | None = None
    error: str | None = None


def signature(name: str, arguments: str) -> str:
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        canonical = arguments
    return f"{name}:{canonical}"


def cached_result(
    state: RunState, tools: dict[str, Tool], name: str, arguments: str, config: LoopConfig
) -> str | None:
    """An earlier successful result of the same call, when dedupe may serve it."""
    tool = tools.get(name)
    if not config.dedupe or tool is None or not (tool.read_only or config.dedupe_all):
        return None
    wanted = signature(name, arguments)
    for run in state.tool_log:
        if run.ok and run.name == name and signature(run.name, run.arguments) == wanted:
            for message in state.messages:
                if message.get("tool_call_id") == run.call_id:
                    return str(message.get("content", ""))
    return None


def record(state: RunState, outcome: ToolOutcome, content: str, recorder: Recorder) -> None:
    if outcome.ran:
        crash_point("LOOPBENCH_CRASH_AFTER_TOOL", outcome.name)
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
            cached=outcome.cached,
        )
    )
    state.messages.append(tool_message(outcome.call_id, outcome.name, content))
    recorder.event(
        state,
        "tool_result",
        call_id=outcome.call_id,
        tool_name=outcome.name,
        ok=outcome.error is None,
        ran=outcome.ran,
        cached=outcome.cached,
        ms=round(outcome.ms, 3),
        content=content,
    )
    recorder.checkpoint(state)


def _reporter(recorder: Recorder, state: RunState, tool_name: str) -> Callable[[str], None]:
    def report(label: str) -> None:
        recorder.progress(state, tool_name, label)

    return report


class ToolDidNotStop(Exception):
    """The token fired and the tool kept running past its grace period."""


async def execute(
    call: dict[str, Any],
    tools: dict[str, Tool],
    ctx: ToolContext,
    config: LoopConfig,
) -> ToolOutcome:
    """Run one call under the per-tool timeout; Cancelled if the token fires."""
    call_id, name, arguments = call_parts(call)
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
        raise ToolDidNotStop(name)
    task.cancel()
    error = ToolError(f"{name} did not finish within {config.tool_timeout_s:g} s and was stopped")
    return ToolOutcome(call_id, name, arguments, "", True, config.tool_timeout_s * 1000, error)


async def answer_pending(
    state: RunState,
    tools: dict[str, Tool],
    workspace: Workspace,
    config: LoopConfig,
    recorder: Recorder,
    cancel: CancelToken,
) -> Stop | None:
    """Answer every pending call; a Stop when the run cannot go on."""
    calls = pending(state)
    answers: dict[str, tuple[ToolOutcome, str]] = {}
    waiting: list[dict[str, Any]] = []
    runnable: list[tuple[dict[str, Any], ToolContext]] = []
    for call in calls:
        call_id, name, arguments = call_parts(call)
        tool = tools.get(name)
        if call_id in state.rejected:
            outcome = ToolOutcome(call_id, name, arguments, "", ran=False)
            answers[call_id] = (outcome, rejection_text(state.rejected[call_id]))
        elif tool is not None and tool.needs_approval and call_id not in state.approved:
            waiting.append(call)
        elif (hit := cached_result(state, tools, name, arguments, config)) is not None:
            answers[call_id] = (ToolOutcome(call_id, name, arguments, hit, False, cached=True), hit)
        else:
            ctx = ToolContext(
                workspace=workspace,
                cancel=cancel if config.cancel_reaches_tools else CancelToken(),
                progress=_reporter(recorder, state, name),
                idempotency_key=f"{state.run_id}:{call_id}",
            )
            recorder.event(
                state, "tool_start", call_id=call_id, tool_name=name, arguments=arguments
            )
            runnable.append((call, ctx))
    results = await asyncio.gather(
        *(execute(call, tools, ctx, config) for call, ctx in runnable), return_exceptions=True
    )
    stop: Stop | None = None
    for (call, ctx), result in zip(runnable, results, strict=True):
        state.child_cost_usd += sum(ctx.child_costs)
        call_id, name, arguments = call_parts(call)
        if isinstance(result, (Cancelled, ToolDidNotStop)):
            stopped = isinstance(result, Cancelled)
            stop = stop or Stop(
                "interrupted",
                {
                    "type": "cancelled",
                    "reason": cancel.reason or "cancelled",
                    "tool_name": name,
                    "tool_stopped": stopped,
                },
            )
            continue
        if isinstance(result, BaseException):
            raise result
        content = result.content
        if result.error is not None:
            content = error_text(result.error, config.tool_errors)
            if config.tool_errors == "fatal":
                stop = stop or Stop("failed", error=f"tool {name} failed: {result.error}")
            elif config.stop_on_permanent_error and result.error.permanent:
                stop = stop or Stop("failed", error=f"permanent error from {name}: {result.error}")
        answers[call_id] = (result, content)
    for call in calls:
        if call["id"] in answers:
            outcome, content = answers[call["id"]]
            record(state, outcome, content, recorder)
    if stop is not None:
        return stop
    if waiting:
        call_id, name, arguments = call_parts(waiting[0])
        interruption = {
            "type": "approval",
            "call_id": call_id,
            "tool_name": name,
            "args": arguments,
        }
        recorder.event(
            state, "approval_required", call_id=call_id, tool_name=name, arguments=arguments
        )
        return Stop("interrupted", interruption)
    return None
