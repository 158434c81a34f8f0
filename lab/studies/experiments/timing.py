"""Provider latency against the harness's own share of the wall time."""

from __future__ import annotations

from lab.studies.experiments.common import Env, Result, drive


async def exp_latency(env: Env) -> Result:
    rows = []
    for latency, url in sorted(env.latency_urls.items()):
        await drive(env, "scripted:plan", url=url)  # warm: connections, tokenizer tables
        s, _ = await drive(env, "scripted:plan", url=url)
        harness_ms = s.harness_ms
        rows.append(
            {
                "provider latency ms": latency,
                "wall ms": round(s.wall_ms, 1),
                "model ms": round(s.model_ms, 1),
                "tool ms": round(s.tool_ms, 1),
                "harness ms": round(harness_ms, 1),
                "harness share": f"{100 * harness_ms / s.wall_ms:.1f}%",
            }
        )
    return Result(
        "latency",
        "11. Provider latency",
        "The provider's latency is the wall time; "
        "the harness's own share is a few milliseconds and shrinks as the model slows.",
        rows,
    )
