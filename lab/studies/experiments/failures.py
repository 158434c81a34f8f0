"""When something fails: tool-error policies, a permanent refusal, provider faults."""

from __future__ import annotations

from lab.studies.experiments.common import Env, Result, drive, row


async def exp_policies(env: Env) -> Result:
    rows, costs = [], {}
    for wording in ("fatal", "generic", "descriptive"):
        s, _ = await drive(env, "scripted:recover", tool_errors=wording)
        costs[wording] = s.cost_usd
        rows.append(row(wording, s, answer=s.answer or ""))
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
