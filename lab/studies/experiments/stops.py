"""Why a reply ended, and what the loop did about it: Anthropic's six stop reasons and OpenAI's
four finish reasons, each produced on demand by the scripted provider in its own wire shape."""

from __future__ import annotations

from harness.replies import FINISH_BRIEFLY
from harness.state import RunState
from lab.studies.experiments.common import Env, Result, drive

# (wire shape, reason, run, the turn whose reply ended for that reason)
CASES = [
    ("anthropic", "tool_use", "scripted:plan", 1),
    ("anthropic", "end_turn", "scripted:plan", 3),
    ("anthropic", "max_tokens", "scripted:plan+trunc@2", 3),
    ("anthropic", "stop_sequence", "scripted:plan+stopseq@2", 3),
    ("anthropic", "pause_turn", "scripted:plan+pause@2", 3),
    ("anthropic", "refusal", "scripted:plan+refuse@1", 2),
    ("openai", "tool_calls", "scripted:plan", 1),
    ("openai", "stop", "scripted:plan", 3),
    ("openai", "length", "scripted:plan+trunc@2", 3),
    ("openai", "content_filter", "scripted:plan+filter@1", 2),
]


def what_followed(state: RunState, turn: int) -> str:
    """What the loop did after reply ``turn``, read from the transcript it left."""
    replies = [i for i, m in enumerate(state.messages) if m["role"] == "assistant"]
    at = replies[turn - 1]
    after = state.messages[at + 1] if at + 1 < len(state.messages) else None
    if after is None:
        if state.status == "failed":
            return f"failed, refusal recorded: {state.refusal}"
        return f'completed with "{state.answer}"'
    if after["role"] == "tool":
        ran = []
        for message in state.messages[at + 1 :]:
            if message["role"] != "tool":
                break
            ran.append(message["name"])
        return f"ran {', '.join(ran)}"
    if after["role"] == "assistant":
        return "sent the conversation back unchanged; the next reply continued it"
    if after == {"role": "user", "content": FINISH_BRIEFLY}:
        return "asked the model to finish briefly"
    return f"went on with a {after['role']} message"


async def exp_stops(env: Env) -> Result:
    rows, runs = [], {}
    for api, reason, model, turn in CASES:
        if (api, model) not in runs:
            runs[api, model], _ = await drive(env, model, api=api)
        s = runs[api, model]
        rows.append(
            {
                "reason": reason,
                "wire": api,
                "run": model,
                "reply": turn,
                "seen": s.turn_records[turn - 1].finish_reason,
                "what the loop did": what_followed(s, turn),
                "status": s.status,
                "turns": s.turns,
                "tools": s.tool_runs,
                "cost": round(s.cost_usd, 6),
            }
        )
    plan = {api: runs[api, "scripted:plan"] for api in ("openai", "anthropic")}
    return Result(
        "stops",
        "14. Stop reasons and finish reasons",
        "Each reason a reply can end for, in the shape that names it: a call runs tools, an "
        "answer completes, a reply cut by the token limit is finished briefly, one cut at a "
        "stop sequence completes with the text so far, a paused turn goes back unchanged (one "
        "turn more), a refusal fails at once. The same run costs the same in both shapes.",
        rows,
        {
            "same_plan_cost_both_shapes": plan["openai"].cost_usd == plan["anthropic"].cost_usd,
            "every_reason_seen": all(r["seen"] == r["reason"] for r in rows),
        },
    )
