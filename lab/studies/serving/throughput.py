"""The scripted provider's requests/s and p50/p99 at concurrency 1 and 8."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from evals.markdown import table
from lab.studies.serving.common import TOOLS, Echo, Figures, Part, server_process
from serve_local.process import serve_command


async def _load(url: str, concurrency: int, total: int, limit_s: float) -> dict[str, Any]:
    body = {
        "model": "scripted:plan",
        "messages": [{"role": "user", "content": "q"}],
        "tools": TOOLS,
    }
    latencies: list[float] = []
    deadline = time.perf_counter() + limit_s
    remaining = total

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal remaining
        while remaining > 0 and time.perf_counter() < deadline:
            remaining -= 1
            start = time.perf_counter()
            response = await client.post(f"{url}/chat/completions", json=body)
            response.raise_for_status()
            latencies.append((time.perf_counter() - start) * 1000)

    async with httpx.AsyncClient(timeout=30) as client:
        start = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "concurrency": concurrency,
        "requests": len(ordered),
        "rps": round(len(ordered) / elapsed, 1),
        "p50_ms": round(ordered[len(ordered) // 2], 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
    }


def run(echo: Echo) -> Figures:
    cmd = serve_command("scripted", log_level="warning")
    rows = []
    with server_process(cmd) as (url, _, _):
        asyncio.run(_load(url, 1, 20, 10))  # warm
        for concurrency in (1, 8):
            rows.append(asyncio.run(_load(url, concurrency, 400, 30)))
            echo(f"   {rows[-1]}")
    return {"rows": rows}


def render(figures: Figures) -> list[str]:
    rows = [
        [r["concurrency"], r["requests"], str(r["rps"]), str(r["p50_ms"]), str(r["p99_ms"])]
        for r in figures["rows"]
    ]
    return [
        "## Scripted provider throughput (loopback, bounded)",
        "",
        table(["concurrency", "requests", "req/s", "p50 ms", "p99 ms"], rows),
    ]


PART = Part("throughput", run, render)
