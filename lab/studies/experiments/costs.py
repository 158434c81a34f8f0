"""What a run costs: the plan run, turn caps and budgets on a runaway, a duplicate call."""

from __future__ import annotations

from lab.studies.experiments.common import Env, Result, drive, row


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
