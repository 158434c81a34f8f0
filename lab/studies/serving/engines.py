"""llama.cpp against transformers on the same weights and transcripts: latency, load time,
peak memory."""

from __future__ import annotations

import asyncio
from typing import Any

from evals.markdown import table
from lab.studies.serving.common import (
    Echo,
    Figures,
    Part,
    median,
    peak_rss_mb,
    post,
    record_transcripts,
    server_process,
)
from serve_local.models import QWEN_CODER
from serve_local.process import serve_command


def run(echo: Echo) -> Figures:
    results: dict[str, Any] = {}
    transcripts: list[list[list[dict[str, Any]]]] = []
    for backend in ("llama", "transformers"):
        cmd = serve_command(backend, model=QWEN_CODER)
        with server_process(cmd) as (url, load_s, pid):
            if not transcripts:
                transcripts = asyncio.run(record_transcripts(url, echo))
            latencies = []
            for requests in transcripts:
                for messages in requests[:3]:
                    ms, _ = post(url, messages)
                    latencies.append(ms)
            results[backend] = {
                "load_s": round(load_s, 1),
                "peak_rss_mb": peak_rss_mb(pid),
                "turn_ms": [round(x, 1) for x in latencies],
                "median_turn_ms": median(latencies),
            }
            echo(
                f"   {backend}: load {load_s:.1f} s, median turn "
                f"{results[backend]['median_turn_ms']:,.0f} ms"
            )
    pairs = zip(results["transformers"]["turn_ms"], results["llama"]["turn_ms"], strict=True)
    results["per_turn_ratio_median"] = median([t / max(l_, 1e-9) for t, l_ in pairs])
    return results


def render(b: Figures) -> list[str]:
    rows = [
        [
            name,
            str(b[name]["load_s"]),
            "–" if b[name]["peak_rss_mb"] is None else f"{b[name]['peak_rss_mb']:,.0f}",
            f"{b[name]['median_turn_ms']:,.0f}",
        ]
        for name in ("llama", "transformers")
    ]
    return [
        "## llama.cpp against transformers (same weights, same transcripts, first 3 turns)",
        "",
        table(["backend", "load s", "peak RSS MB", "median turn ms"], rows),
        f"Median per-turn latency ratio transformers/llama: {b['per_turn_ratio_median']:.2f}.",
        "",
    ]


PART = Part("backends", run, render)
