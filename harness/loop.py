"""The agent loop: ask the model, run the tools it asks for, stop at one of the exits.

Exits, each recorded as data on the run state (``status`` and ``interruption``):

* ``completed``: the model answered without asking for a tool, or called ``submit``;
* ``failed``: the provider failed for good (after bounded retries, or at once for 4xx), the
  model refused, or a tool failed under the ``fatal`` tool-error wording (or permanently, if asked);
* ``max_turns_exceeded`` / ``budget_exceeded``: a turn, dollar or token limit was reached.
  Limits are checked at the top of every iteration, *before* the model is asked, and a turn's
  price is known only once it is over: a dollar budget is overshot by at most one turn's cost;
* ``interrupted``: a call needs approval (``harness.approvals``), the cancellation token fired,
  or the run's time limit passed. The limit counts the run's own work (``work_ms``: the
  model's time as its server reports it, and the tools' time), checked before each model call;
  the wall clock stops the run at the limit too, and when it does while no tool is running and
  the server reports its own time, the limit was hit by wall time only (``wall_limit_hit``: a
  busy machine, which an eval counts as an error and reruns). An interrupted run can be resumed.

Every iteration first reads what the last saved reply means (``settle``) and answers
``pending()`` calls (asked for, not yet answered), so resuming a saved run and going on after an
approval are the normal path: a turn already paid for is never asked again, a saved final reply
completes the run, and a tool whose result is saved never runs again.

The loop's hooks (which tools, tool choice, submit, nudges, the repeated-call guard, the worked
example...) are objects in ``harness.policies``, each consulted through the hooks of
``harness.hooks``; their settings are ``LoopConfig.settings``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import harness.hooks as hooks
from harness.cancel import Cancelled, CancelToken
from harness.client import ChatClient
from harness.config import LoopConfig
from harness.errors import KeyRefused, ProviderError, ToolServerFailed
from harness.execute import Stop, answer_pending
from harness.replies import record_turn, settle
from harness.setup import Setup
from harness.state import RunState, Status
from harness.tools import ToolTable
from harness.trace import Recorder

__all__ = ["SYSTEM_PROMPT", "LoopConfig", "run_loop"]

SYSTEM_PROMPT = hooks.BASE_PROMPT  # the plain loop's; harness.hooks.system_prompt for a preset


def stop(
    state: RunState,
    recorder: Recorder,
    status: Status,
    interruption: dict[str, Any] | None = None,
    error: str | None = None,
) -> RunState:
    state.status, state.interruption = status, interruption
    state.error = error or state.error
    # No checkpoint here: run_loop's ``finally`` saves every exit, with the wall time.
    recorder.event(
        state,
        "run_stopped",
        status=status,
        reason=interruption,
        error=state.error,
        stop_reason=state.stop_reason,
        turns=state.turns,
        cost_usd=state.cost_usd,
    )
    return state


def limit_reached(state: RunState, config: LoopConfig) -> tuple[Status, dict[str, Any]] | None:
    if config.max_turns is not None and state.turns >= config.max_turns:
        return "max_turns_exceeded", {"type": "max_turns"}
    if config.max_budget_usd is not None and state.cost_usd >= config.max_budget_usd:
        return "budget_exceeded", {"type": "max_budget"}
    tokens = state.prompt_tokens + state.completion_tokens
    if config.max_total_tokens is not None and tokens >= config.max_total_tokens:
        return "budget_exceeded", {"type": "max_tokens"}
    if config.timeout_s is not None and state.work_ms / 1000 >= config.timeout_s:
        return "interrupted", {"type": "timeout"}
    return None


async def conclude(
    state: RunState,
    client: ChatClient,
    config: LoopConfig,
    recorder: Recorder,
    limit: tuple[Status, dict[str, Any]],
    cancel: CancelToken,
    text: str,
    specs: list[dict[str, Any]],
) -> None:
    """One last call that may not call a tool, asking for an answer from what is known.

    The request offers the tools the turn would have offered, under ``tool_choice: "none"``:
    the prompt keeps its prefix (the tools are rendered into it), so a server's prefix cache
    carries the conversation into the conclusion, and no call can be made. The request and its
    reply enter the state together, with the limit they answer, so the reply's checkpoint is
    enough for a resume to end the run the same way.
    """
    request = {"role": "user", "content": text}
    # The turn's token cap and penalties hold here too.
    offered, options = hooks.plan_turn(state, config, specs)
    options = replace(options, tool_choice="none" if offered else None, parallel_tool_calls=None)
    reply = await client.chat(state.model, [*state.messages, request], offered, cancel, options)
    state.messages.append(request)
    state.concluding = {"status": limit[0], "interruption": limit[1]}
    record_turn(state, reply, config.prices, recorder)


def deadline(
    state: RunState, config: LoopConfig, cancel: CancelToken
) -> asyncio.TimerHandle | None:
    """The wall clock at the run's time limit: a turn or a tool that never returns is stopped
    there (``stopped_by`` says whose doing it was)."""
    if config.timeout_s is None:
        return None
    left = config.timeout_s - state.wall_ms / 1000
    return asyncio.get_running_loop().call_later(max(left, 0), cancel.cancel, "timeout")


def wall_time_only(state: RunState, interruption: dict[str, Any]) -> bool:
    """The wall clock reached the limit while the run's work had not: no tool was running (a
    tool's time is work) and every reply came from a server that reports its own time (so a
    reply still in flight is not counted as work; without such reports, wall time is all
    there is to go by, and the limit is the model's)."""
    if "tool_name" in interruption or not state.turn_records:
        return False  # a tool's time is work; before a first reply, nothing tells them apart
    return all(
        isinstance((t.timings or {}).get("predicted_ms"), (int, float)) for t in state.turn_records
    )


async def run_loop(
    state: RunState,
    client: ChatClient,
    setup: Setup,
    config: LoopConfig | None = None,
    recorder: Recorder | None = None,
    cancel: CancelToken | None = None,
    stop_when: Callable[[RunState], tuple[Status, dict[str, Any]] | None] | None = None,
) -> RunState:
    """Drive ``state`` until it stops, with what ``setup`` gives the run (its tools over its
    workspace, and what the system prompt may say of it); the state records why it stopped.

    ``stop_when``: the caller's own limit, read where the loop's are (every call of the last
    reply answered, before the next model call): a status and its reason end the run there (a
    conversation's step and error caps, counted over both its sides).

    A run that has no system message and no reply yet is given the hooks' system prompt
    (unless ``setup.system_prompt`` is False: the messages go as they are)."""
    config, recorder = config or LoopConfig(), recorder or Recorder()
    first = not any(m["role"] in ("system", "assistant") for m in state.messages)
    if setup.system_prompt and first:
        state.messages.insert(0, {"role": "system", "content": hooks.system_prompt(config, setup)})
    tools = hooks.offered_tools(setup.tools, config, state.meta.get("task_tools"))
    workspace = setup.workspace
    by_name, specs = ToolTable(tools, setup.unknown), [t.spec() for t in tools]

    async def turns(token: CancelToken) -> RunState:
        while True:
            hooks.ask(state, config, set(by_name))
            if (answer := hooks.answer(state, config)) is not None:
                state.answer = answer
                return stop(state, recorder, "completed")
            if outcome := settle(state, config.finish_cut_replies):
                return stopped_by(state, recorder, outcome, token)
            if outcome := await answer_pending(state, by_name, workspace, config, recorder, token):
                return stopped_by(state, recorder, outcome, token)
            if stop_when is not None and (own := stop_when(state)) is not None:
                return stop(state, recorder, *own)
            if limit := limit_reached(state, config):
                if text := hooks.conclusion(config, limit[1]["type"]):
                    await conclude(state, client, config, recorder, limit, token, text, specs)
                    continue  # settle ends the run under the limit
                return stop(state, recorder, *limit)
            offered, options = hooks.plan_turn(state, config, specs)
            reply = await client.chat(state.model, state.messages, offered, token, options)
            record_turn(state, reply, config.prices, recorder)

    return await framed(state, config, recorder, cancel, turns)


async def framed(
    state: RunState,
    config: LoopConfig,
    recorder: Recorder,
    cancel: CancelToken | None,
    body: Callable[[CancelToken], Awaitable[RunState]],
) -> RunState:
    """Run ``body`` as the run's driver: under its wall-clock deadline and ``cancel``, with
    the clock running; a cancellation, a provider that failed for good or a tool's server that
    failed ends the run with that status, and every exit is saved. The agent loop and the
    workflows (``evals.solvers``) both run inside it."""
    token = CancelToken()
    if cancel is not None:
        cancel.link(token)
    timer = deadline(state, config, token)
    state.status, state.interruption = "running", None
    recorder.start_clock()
    try:
        return await body(token)
    except Cancelled as exc:
        cancelled = {"type": "cancelled", "reason": exc.reason}
        return stopped_by(state, recorder, Stop("interrupted", cancelled), token)
    except KeyRefused:
        raise  # no run goes on without a key the endpoint takes: the caller's work ends
    except ProviderError as exc:
        state.provider_unavailable = exc.unavailable
        state.prompt_too_long = exc.context_overflow and state.turns == 0
        return stop(state, recorder, "failed", error=str(exc))
    except ToolServerFailed as exc:
        state.tool_server_failed = True
        return stop(state, recorder, "failed", error=str(exc))
    finally:
        if timer is not None:
            timer.cancel()
        recorder.checkpoint(state)
        recorder.stop_clock()


def stopped_by(state: RunState, recorder: Recorder, outcome: Stop, token: CancelToken) -> RunState:
    interruption, error = outcome.interruption, outcome.error
    if interruption and interruption.get("type") == "cancelled" and token.reason == "timeout":
        interruption = {**interruption, "type": "timeout"}
        interruption.pop("reason", None)
        if wall_time_only(state, interruption):
            state.wall_limit_hit = True
            error = (
                "the time limit was reached by the wall clock while the run's model and tool "
                f"work came to {state.work_ms / 1000:.1f} s: the machine was busy, not the "
                "model slow (an eval counts an error; --resume reruns it)"
            )
    return stop(state, recorder, outcome.status, interruption, error)
