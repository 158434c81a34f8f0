"""A subagent as a tool: its own cap, its own bill, one Stop for both."""

from __future__ import annotations

import asyncio
import json

from harness.cancel import CancelToken
from harness.config import LoopConfig
from harness.subagent import research_tool
from harness.tools import default_tools
from lab.studies.experiments.common import Env, Result, drive


async def exp_subagent(env: Env) -> Result:
    tools = [
        *default_tools(),
        research_tool(env.url, "scripted:runaway", LoopConfig(max_turns=5), api="openai"),
    ]
    s, _ = await drive(env, "scripted:research", tools=tools, max_budget_usd=0.005)
    slow_url = env.latency_urls.get(50, env.url)
    token = CancelToken()
    asyncio.get_running_loop().call_later(0.25, token.cancel, "user pressed Stop")
    stopped_tools = [
        *default_tools(),
        research_tool(slow_url, "scripted:runaway", LoopConfig(max_turns=50), api="openai"),
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
