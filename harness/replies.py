"""A model reply once it is paid for: recorded with its turn, its calls named, and what it means.

The meaning of a reply is read back from the saved state (``settle``), never from a local
variable, so a run killed after a reply was saved and then resumed does what the uncrashed run
did: it ends on a saved final answer instead of asking the model again.
"""

from __future__ import annotations

from typing import Any, Literal

from harness.client import ModelReply
from harness.execute import Stop
from harness.faults import crash_point
from harness.prices import Prices
from harness.state import Message, RunState, TurnRecord, last_reply
from harness.trace import Recorder

FINISH_BRIEFLY = "Your last reply was cut off by the length limit. Finish it briefly."

Action = Literal["run_tools", "complete", "finish_briefly", "continue", "fail"]
# What the loop does with a reply, by the reason it ended, whichever wire shape named it.
ACTIONS: dict[str, Action] = {
    "tool_calls": "run_tools",
    "tool_use": "run_tools",
    "stop": "complete",
    "end_turn": "complete",
    "stop_sequence": "complete",  # the text so far is the answer; the reason is recorded
    "length": "finish_briefly",
    "max_tokens": "finish_briefly",
    "pause_turn": "continue",  # sent back unchanged, so the model goes on with its turn
    "content_filter": "fail",
    "refusal": "fail",
}


def name_calls(state: RunState, message: Message, turn: int) -> dict[str, str]:
    """Give each call an id no earlier call of the run has; returns {new id: provider's id}.

    Several servers number the calls of every reply from zero, and a tool message names its
    call only by id: a repeated id would answer, or approve, the wrong call.
    """
    used = {
        call.get("id")
        for m in state.messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    }
    renamed: dict[str, str] = {}
    for index, call in enumerate(message.get("tool_calls") or []):
        original = call.get("id")
        if not original or original in used:
            fresh = f"call_{turn}_{index}"
            while fresh in used:
                fresh += "_"
            call["id"] = fresh
            renamed[fresh] = str(original or "")
        used.add(call["id"])
    return renamed


def record_turn(state: RunState, reply: ModelReply, prices: Prices, recorder: Recorder) -> None:
    state.turns += 1
    state.prompt_tokens += reply.prompt_tokens
    state.completion_tokens += reply.completion_tokens
    state.cost_usd += prices.cost(reply.prompt_tokens, reply.completion_tokens)
    renamed = name_calls(state, reply.message, state.turns)
    turn = TurnRecord(
        turn=state.turns,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_ms=round(reply.latency_ms, 3),
        finish_reason=reply.finish_reason,
        cost_usd=state.cost_usd,
        timings=reply.timings,
        retries=reply.retries,
        retry_wait_s=reply.waited_s,
        renamed_call_ids=renamed or None,
        api=reply.api,
        stop_sequence=reply.stop_sequence,
        refused_calls=reply.refused_calls,
    )
    state.stop_reason = reply.finish_reason
    state.turn_records.append(turn)
    state.messages.append(reply.message)
    recorder.checkpoint(state)
    recorder.event(
        state,
        "turn",
        **{k: v for k, v in vars(turn).items() if v is not None},
        content=reply.message.get("content"),
        tool_calls=reply.message.get("tool_calls"),
    )
    crash_point("LOOPBENCH_CRASH_AFTER_TURN", str(state.turns))


def settle(state: RunState, finish_cut: bool = True) -> Stop | None:
    """What the last saved reply means when it is the newest message: a Stop, or go on.

    Go on when the reply asks for tools (they are answered next), was cut at the length limit
    (the model is asked to finish, unless ``finish_cut`` is off) or paused its turn (the
    conversation goes back unchanged). A refusal fails the run, a reply to the last call after
    a limit ends it under that limit, and any other reply (one cut at a stop sequence too) is
    the final answer: see ``ACTIONS``.
    """
    last = last_reply(state)
    if last is None or last[0] != len(state.messages) - 1:
        return None
    message = state.messages[-1]
    finish = state.turn_records[-1].finish_reason if state.turn_records else "stop"
    if state.concluding is not None:
        state.answer = _text(message)
        return Stop(state.concluding["status"], state.concluding["interruption"])
    action = ACTIONS.get(finish, "complete")
    if message.get("refusal") or action == "fail":
        state.refusal = str(message.get("refusal") or _text(message) or finish)
        return Stop("failed", error=f"the model refused: {state.refusal}")
    if message.get("tool_calls"):
        return None
    if action == "finish_briefly" and finish_cut:
        state.messages.append({"role": "user", "content": FINISH_BRIEFLY})
        return None
    if action == "continue":
        return None
    state.answer = _turn_text(state)
    return Stop("completed")


def _text(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")


def _turn_text(state: RunState) -> str:
    """The text of the last turn: a paused reply and its continuations read as one."""
    parts = []
    for message in reversed(state.messages):
        if message["role"] != "assistant":
            break
        parts.append(_text(message))
    return "".join(reversed(parts))
