"""Our server's llama backend against llama.cpp's own C++ server (``llama-server``): the same
GGUF, the same threads, one request at a time, identical chat requests without tools sent to
each in turn (A B C per request), so all render the same template and decode greedily.

llama-server runs twice: as ``serve_local.llama_server.command`` starts it (flash attention
``auto``, which is on for this CPU build) and with ``--flash-attn off``, the attention our
backend's llama-cpp-python uses by default: only the latter computes the same logits as ours,
so only its replies can be expected to match ours token for token."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx

from evals.markdown import table
from lab.studies.serving.common import (
    Echo,
    Figures,
    Part,
    median_of,
    per_token,
    server_process,
    verdict,
)
from serve_local import llama_server
from serve_local.models import QWEN_CODER
from serve_local.process import serve_command

THREADS = 2
MAX_TOKENS = 128
TARGET = 1.15  # ours/peer, median ms per generated token
WARM = "Say hello in one sentence."
PROMPTS = (
    "Write one paragraph on why version control matters to a small team of programmers.",
    "In a paragraph, explain how a hash table finds a key, for someone new to programming.",
    "Describe in one paragraph what a compiler does between source code and a program.",
    "Write a paragraph about the trade-offs between threads and processes in a server.",
    "Explain in one paragraph why unit tests should be fast and independent of each other.",
    "In one paragraph, describe what happens when a browser loads a web page.",
    "Write a paragraph on how a garbage collector decides which memory it can free.",
    "Describe in a paragraph why floating-point numbers cannot represent 0.1 exactly.",
)
# (a) ours, (b) llama-server as command() starts it, (c) the same with flash attention off
SERVERS = ("ours", "peer", "peer_fa_off")
NO_FLASH = ["--flash-attn", "off"]


def ours_args(threads: int = THREADS) -> list[str]:
    """Our server's llama backend on the packaged model (server_process adds the port)."""
    return serve_command("llama", model=QWEN_CODER, threads=threads, log_level="warning")


def llama_server_args(slots: int = 1, threads: int = THREADS) -> list[str]:
    """llama-server's command line for the packaged model, without ``--port`` (server_process
    adds one); ``llama_server.NotBuilt`` says how to build it when it is not built."""
    return llama_server.command(QWEN_CODER, None, threads=threads, slots=slots)


def load_average() -> float:
    """The machine's 1-minute load average: other work on the cores skews every timing."""
    return round(os.getloadavg()[0], 2)


def request(prompt: str, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    return {
        "model": QWEN_CODER,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": max_tokens,
    }


def send(url: str, prompt: str, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    """One request; the figures of its reply (timings as the server reports them)."""
    start = time.perf_counter()
    response = httpx.post(f"{url}/chat/completions", json=request(prompt, max_tokens), timeout=600)
    wall_ms = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    reply = response.json()
    timings, usage = reply.get("timings") or {}, reply.get("usage") or {}
    return {
        "wall_ms": round(wall_ms, 1),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "prompt_n": timings.get("prompt_n"),
        "prompt_ms": timings.get("prompt_ms"),
        "predicted_n": timings.get("predicted_n"),
        "predicted_ms": timings.get("predicted_ms"),
        "finish_reason": reply["choices"][0].get("finish_reason"),
        "text": reply["choices"][0]["message"].get("content") or "",
    }


def summarize(rows: list[dict[str, Any]]) -> Figures:
    """Medians per server over the rows (one per request, a reply from each of SERVERS), and
    ours over each llama-server's."""
    per: dict[str, dict[str, Any]] = {}
    for who in SERVERS:
        replies = [r[who] for r in rows]
        per[who] = {
            "prompt_ms_per_token": median_of(
                [per_token(x["prompt_ms"], x["prompt_n"]) for x in replies]
            ),
            "predicted_ms_per_token": median_of(
                [per_token(x["predicted_ms"], x["predicted_n"]) for x in replies]
            ),
            "wall_ms_per_token": median_of(
                [per_token(x["wall_ms"], x["completion_tokens"]) for x in replies]
            ),
            "completion_tokens": sum(x["completion_tokens"] or 0 for x in replies),
        }

    def ratio(key: str, peer: str) -> float | None:
        a, b = per["ours"][key], per[peer][key]
        return None if a is None or not b else round(a / b, 3)

    return {
        "requests": len(rows),
        "max_tokens": MAX_TOKENS,
        "threads": THREADS,
        "target": TARGET,
        "servers": per,
        "ratios": {
            peer: {
                "generated": ratio("predicted_ms_per_token", peer),
                "prompt": ratio("prompt_ms_per_token", peer),
                "wall": ratio("wall_ms_per_token", peer),
            }
            for peer in SERVERS[1:]
        },
        "identical_replies": {
            peer: sum(r["ours"]["text"] == r[peer]["text"] for r in rows) for peer in SERVERS[1:]
        },
        "same_prompt_tokens": {
            peer: sum(r["ours"]["prompt_tokens"] == r[peer]["prompt_tokens"] for r in rows)
            for peer in SERVERS[1:]
        },
    }


def run(echo: Echo) -> Figures:
    peer_args = llama_server_args(slots=1)  # fails first, before any server starts
    rows: list[dict[str, Any]] = []
    load_before = load_average()
    with (
        server_process(ours_args()) as (ours, _, _),
        server_process(peer_args) as (peer, _, _),
        server_process(peer_args + NO_FLASH) as (peer_fa_off, _, _),
    ):
        urls = dict(zip(SERVERS, (ours, peer, peer_fa_off), strict=True))
        props = httpx.get(f"{peer.removesuffix('/v1')}/props", timeout=10).json()
        for url in urls.values():
            send(url, WARM, 16)
        for n, prompt in enumerate(PROMPTS, start=1):
            row: dict[str, Any] = {"prompt": prompt}
            for who, url in urls.items():
                row[who] = send(url, prompt)
            rows.append(row)
            echo(
                f"   request {n}: "
                + ", ".join(
                    f"{who} {row[who]['completion_tokens']} tokens {row[who]['wall_ms']:,.0f} ms"
                    for who in SERVERS
                )
                + "; same text as ours: "
                + ", ".join(who for who in SERVERS[1:] if row[who]["text"] == row["ours"]["text"])
            )
    return {
        "rows": rows,
        "peer_build": props.get("build_info"),
        "load_before": load_before,
        "load_after": load_average(),
        **summarize(rows),
    }


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render(f: Figures) -> list[str]:
    s, ratios, n = f["servers"], f["ratios"], f["requests"]
    figures = (
        ("ms per generated token (predicted_ms / predicted_n)", "predicted_ms_per_token"),
        ("ms per prompt token (prompt_ms / prompt_n)", "prompt_ms_per_token"),
        ("client wall ms per generated token", "wall_ms_per_token"),
    )
    rows = [
        [label] + [_ms(s[who][key]) for who in SERVERS] + [_x(ratios[p][r]) for p in SERVERS[1:]]
        for (label, key), r in zip(figures, ("generated", "prompt", "wall"), strict=True)
    ]
    rows.append(["generated tokens (all requests)", *(s[w]["completion_tokens"] for w in SERVERS)])
    rows[-1] += ["", ""]
    rows.append(
        ["replies identical to ours", "–"]
        + [f"{f['identical_replies'][p]}/{n}" for p in SERVERS[1:]]
        + ["", ""]
    )
    rows.append(
        ["prompt token counts equal to ours", "–"]
        + [f"{f['same_prompt_tokens'][p]}/{n}" for p in SERVERS[1:]]
        + ["", ""]
    )
    head = [
        "median per request", "(a) ours", "(b) llama-server", "(c) llama-server fa off",
        "(a)/(b)", "(a)/(c)",
    ]  # fmt: skip
    per_request = [
        [
            i,
            " / ".join(str(r[w]["prompt_tokens"]) for w in SERVERS),
            " / ".join(str(r[w]["completion_tokens"]) for w in SERVERS),
            " / ".join(_ms(per_token(r[w]["predicted_ms"], r[w]["predicted_n"])) for w in SERVERS),
            " / ".join(f"{r[w]['wall_ms']:,.0f}" for w in SERVERS),
            " / ".join("yes" if r[p]["text"] == r["ours"]["text"] else "no" for p in SERVERS[1:]),
        ]
        for i, r in enumerate(f.get("rows", []), start=1)
    ]
    generated = ratios["peer"]["generated"]
    lines = [
        "## Our llama backend against llama.cpp's llama-server",
        "",
        f"{n} distinct chat requests without tools (one user message asking for a paragraph, "
        f"max_tokens {f['max_tokens']}, temperature 0), sent interleaved per request to (a) "
        "`python -m serve_local --backend llama`, (b) llama.cpp's `llama-server` (build "
        f"{f.get('peer_build') or 'unknown'}, as `make serve-llama-server` starts it: `--jinja`, "
        "one slot, flash attention `auto`) and (c) the same with `--flash-attn off`, the "
        f"attention llama-cpp-python uses by default; the same GGUF, `--threads {f['threads']}` "
        "each, all warmed with one request first. Timings are each server's own `timings` "
        "(prompt_n counts the prompt tokens not already in its cache; ours times prompt "
        "evaluation up to the first generated token); wall time is the client's, prompt "
        "included. llama-server counts the end-of-generation token in predicted_n and "
        "completion_tokens, one more than ours on a reply that stops; figures are as reported. "
        f"The machine's 1-minute load average: {f.get('load_before', '–')} before, "
        f"{f.get('load_after', '–')} after.",
        "",
        table(head, rows),
        f"- Target ours within {f['target']}× of llama-server (b) per generated token: "
        f"measured {_x(generated)}, {verdict(generated is not None and generated <= f['target'])}"
        f"; against (c) {_x(ratios['peer_fa_off']['generated'])}.",
        f"- Prompt evaluation per prompt token, ours / llama-server: {_x(ratios['peer']['prompt'])}"
        f" (b), {_x(ratios['peer_fa_off']['prompt'])} (c).",
        f"- Identical replies: {f['identical_replies']['peer']}/{n} with (b), "
        f"{f['identical_replies']['peer_fa_off']}/{n} with (c). Greedy decoding follows the "
        "logits; flash attention sums in another order, and where two tokens are nearly tied "
        "the reply takes another path.",
        "",
    ]
    if per_request:
        head = [
            "request", "prompt tokens a / b / c", "generated a / b / c",
            "ms per generated token a / b / c", "wall ms a / b / c", "same text as a: b / c",
        ]  # fmt: skip
        lines.append(table(head, per_request))
    return lines


DOCS_PAGE = Path("docs/scale.md")


def docs(f: Figures) -> list[tuple[Path, str, str]]:
    """docs/scale.md's comparison with llama-server: bench.md's table and its three lines
    (the section's heading, method and per-request table left out)."""
    lines = render(f)
    start = next(i for i, line in enumerate(lines) if line.startswith("| median per request"))
    end = lines.index("", start)
    return [(DOCS_PAGE, "peer-table", "\n".join(lines[start:end]) + "\n")]


PART = Part("peer", run, render, docs)
