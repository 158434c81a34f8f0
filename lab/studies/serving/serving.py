"""The six-task transcripts replayed, interleaved A B C per turn, through (a) our server's llama
backend over HTTP, (b) the same GGUF in-process (the floor: no HTTP, no template, no parsing)
and (c) llama-cpp-python's bundled OpenAI server over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any

from evals.markdown import table
from lab.studies.serving.common import (
    MAX_TOKENS,
    RECORD_TURNS,
    TOOLS,
    Echo,
    Figures,
    Part,
    body,
    post,
    record_transcripts,
    server_process,
    verdict,
)
from serve_local.backends.llama import LlamaBackend
from serve_local.backends.reply import Sampling
from serve_local.models import QWEN_CODER, resolve
from serve_local.process import serve_command
from serve_local.schema import ChatRequest


def usable_calls(reply: dict[str, Any]) -> bool:
    calls = reply["choices"][0]["message"].get("tool_calls") or []
    names = {t["function"]["name"] for t in TOOLS}
    try:
        return bool(calls) and all(
            c["function"]["name"] in names
            and isinstance(json.loads(c["function"]["arguments"]), dict)
            for c in calls
        )
    except (KeyError, TypeError, json.JSONDecodeError):
        return False


def _content_not_null(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "content": m.get("content") or ""} for m in messages]


def run(echo: Echo) -> Figures:
    model = resolve(QWEN_CODER)
    ours_cmd = serve_command("llama", model=QWEN_CODER)
    peer_cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model.path),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(os.cpu_count()),
        "--n_threads_batch",
        str(os.cpu_count()),
    ]
    floor = LlamaBackend(model, n_ctx=4096)
    floor.load()

    def tokens_of(messages: list[dict[str, Any]]) -> list[int]:
        return floor.prompt_tokens(ChatRequest.model_validate(body(messages)))

    rows: list[dict[str, Any]] = []
    with server_process(ours_cmd) as (ours, _, _), server_process(peer_cmd) as (peer, _, _):
        transcripts = asyncio.run(record_transcripts(ours, echo))
        # The recording left our server's cache warm with the shared system prompt and tools;
        # give the floor and the peer the same start.
        warm = transcripts[0][0]
        floor.generate(tokens_of(warm), 8, Sampling(), threading.Event())
        post(peer, warm)
        for t_index, requests in enumerate(transcripts):
            for turn, messages in enumerate(requests, start=1):
                a_ms, a = post(ours, messages)
                tokens = tokens_of(messages)
                start = time.perf_counter()
                generated = floor.generate(tokens, MAX_TOKENS, Sampling(), threading.Event())
                b_ms = (time.perf_counter() - start) * 1000
                c_ms, c = post(peer, messages)
                peer_error = str(c.get("error", ""))[:160]
                if peer_error:
                    # The peer rejects history it should accept (an assistant message with
                    # content null and tool_calls); time it on the same history with "" instead.
                    c_ms, c = post(peer, _content_not_null(messages))
                timings = a.get("timings") or {}
                rows.append(
                    {
                        "task": t_index + 1,
                        "turn": turn,
                        "ours_ms": round(a_ms, 1),
                        "floor_ms": round(b_ms, 1),
                        "peer_ms": round(c_ms, 1),
                        "ours_prompt_n": timings.get("prompt_n"),
                        "ours_cache_n": timings.get("cache_n"),
                        "floor_prompt_n": generated.prompt_n,
                        "floor_cache_n": generated.cache_n,
                        "peer_prompt_tokens": (c.get("usage") or {}).get("prompt_tokens"),
                        "ours_out": (a.get("usage") or {}).get("completion_tokens", 0),
                        "floor_out": generated.predicted_n,
                        "peer_out": (c.get("usage") or {}).get("completion_tokens", 0),
                        "ours_tool_calls": "choices" in a and usable_calls(a),
                        "peer_tool_calls": "choices" in c and usable_calls(c),
                        "peer_error": peer_error,
                        "peer_error_after_adapting": str(c.get("error", ""))[:160],
                    }
                )
                echo(
                    f"   task {t_index + 1} turn {turn}: ours {a_ms:,.0f} ms, floor "
                    f"{b_ms:,.0f} ms, peer {c_ms:,.0f} ms"
                )
    multi = [r for r in rows if r["turn"] > 1]
    total = {k: sum(r[k] for r in rows) for k in ("ours_ms", "floor_ms", "peer_ms")}
    return {
        "rows": rows,
        "total_ms": total,
        "ours_over_floor": total["ours_ms"] / total["floor_ms"],
        "ours_over_peer_multi_turn": (
            sum(r["ours_ms"] for r in multi) / max(sum(r["peer_ms"] for r in multi), 1e-9)
        ),
        "ours_usable_tool_calls": sum(r["ours_tool_calls"] for r in rows),
        "peer_usable_tool_calls": sum(r["peer_tool_calls"] for r in rows),
        "turns": len(rows),
        "ms_per_out_token_multi_turn": {
            who: sum(r[f"{who}_ms"] for r in multi) / max(sum(r[f"{who}_out"] for r in multi), 1)
            for who in ("ours", "floor", "peer")
        },
        "peer_errors": sum(bool(r["peer_error"]) for r in rows),
        "peer_errors_after_adapting": sum(bool(r["peer_error_after_adapting"]) for r in rows),
        "peer_error_example": next((r["peer_error"] for r in rows if r["peer_error"]), ""),
    }


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def render(s: Figures) -> list[str]:
    t = s["total_ms"]
    totals = [
        ["total ms", f"{t['ours_ms']:,.0f}", f"{t['floor_ms']:,.0f}", f"{t['peer_ms']:,.0f}"],
        [
            "usable tool_calls",
            f"{s['ours_usable_tool_calls']}/{s['turns']}",
            "–",
            f"{s['peer_usable_tool_calls']}/{s['turns']}",
        ],
        [
            "requests rejected",
            "0",
            "–",
            f"{s['peer_errors']} as sent, "
            f'{s.get("peer_errors_after_adapting", 0)} after content null → ""',
        ],
    ]
    per_turn = [
        [
            r["task"],
            r["turn"],
            f"{r['ours_ms']:,.0f}",
            f"{r['floor_ms']:,.0f}",
            f"{r['peer_ms']:,.0f}",
            f"{r['ours_prompt_n']} / {r['ours_cache_n']}",
            f"{r['floor_prompt_n']} / {r['floor_cache_n']}",
            r["peer_prompt_tokens"],
            f"{r.get('ours_out')} / {r.get('floor_out')} / {r.get('peer_out')}",
            _yes(r["ours_tool_calls"]),
            _yes(r["peer_tool_calls"]),
        ]
        for r in s["rows"]
    ]
    per_token = s["ms_per_out_token_multi_turn"]
    return [
        "## Serving overhead against the runtime's floor and the peer server",
        "",
        f"The six-task transcripts ({s['turns']} turns, recorded from a Qwen run capped at "
        f"{RECORD_TURNS} turns per task, max_tokens {MAX_TOKENS}), replayed interleaved "
        "per turn through (a) this server over HTTP, (b) the same GGUF in-process with the "
        "same tokens and greedy settings (no HTTP, no template, no parsing) and (c) "
        "`python -m llama_cpp.server` over HTTP.",
        "",
        table(["", "(a) ours", "(b) floor", "(c) llama_cpp.server"], totals),
        "The peer answered an assistant message with `content: null` and `tool_calls` with "
        f"an error (`{s.get('peer_error_example', '')[:100]}`); such turns were timed again "
        'with `content: ""`, which it accepts.',
        "",
        f"- Target (a)/(b) ≤ 1.05 on total latency: measured {s['ours_over_floor']:.3f}, "
        f"{verdict(s['ours_over_floor'] <= 1.05)}.",
        f"- Target (a) faster than (c) on multi-turn transcripts (turns 2+): (a)/(c) = "
        f"{s['ours_over_peer_multi_turn']:.3f}, "
        f"{verdict(s['ours_over_peer_multi_turn'] < 1)}. The two do not generate the same "
        "replies: the peer renders the tools its own way, the model then writes shorter "
        "replies with no usable call, so wall time compares unequal work. Per generated "
        "token on turns 2+ (prompt evaluation included): ours "
        f"{per_token['ours']:.1f} ms, floor {per_token['floor']:.1f} ms, peer "
        f"{per_token['peer']:.1f} ms.",
        "",
        table(
            [
                "task",
                "turn",
                "ours ms",
                "floor ms",
                "peer ms",
                "ours prompt_n / cache_n",
                "floor prompt_n / cache_n",
                "peer prompt tokens",
                "out tokens ours / floor / peer",
                "ours calls",
                "peer calls",
            ],
            per_turn,
        ),
    ]


PART = Part("serving", run, render)
