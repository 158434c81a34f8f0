"""What each packaged model costs to serve: load time, peak memory, ms per prompt token and per
generated token, on our llama backend and on llama.cpp's ``llama-server`` with the same GGUF,
side by side in one run.

For each model installed, both servers are started (each timed from process start to its first
``/v1/models`` answer, with the GGUF already assembled), warmed with one request, then sent the
same chat requests without tools, interleaved (ours, theirs, ours, ...), greedy. Timings are
each server's own ``timings``; peak RSS is the server process's high-water mark (VmHWM) after
the requests. Figures are medians over the requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.markdown import table
from lab.studies.serving.common import (
    Echo,
    Figures,
    Part,
    fmt,
    median_of,
    peak_rss_mb,
    per_token,
    server_process,
)
from lab.studies.serving.peer import WARM, load_average, send
from serve_local import llama_server
from serve_local.models import PACKAGED
from serve_local.process import serve_command

THREADS = 2
MAX_TOKENS = 64
PROMPTS = (
    "Write one paragraph on why version control matters to a small team of programmers.",
    "In a paragraph, explain how a hash table finds a key, for someone new to programming.",
    "Describe in one paragraph what a compiler does between source code and a program.",
)
SERVERS = ("ours", "llama-server")


def _args(model: str) -> dict[str, list[str]]:
    ours = serve_command("llama", model=model, threads=THREADS, log_level="warning")
    return {"ours": ours, "llama-server": llama_server.command(model, None, threads=THREADS)}


def measure(model: str, echo: Echo) -> dict[str, Any]:
    args = _args(model)
    figures: dict[str, Any] = {}
    with (
        server_process(args["ours"]) as (ours, ours_ready_s, ours_pid),
        server_process(args["llama-server"]) as (peer, peer_ready_s, peer_pid),
    ):
        urls = {"ours": ours, "llama-server": peer}
        for url in urls.values():
            send(url, WARM, 8)
        replies: dict[str, list[dict[str, Any]]] = {who: [] for who in SERVERS}
        for prompt in PROMPTS:
            for who, url in urls.items():
                replies[who].append(send(url, prompt, MAX_TOKENS))
        ready = {"ours": ours_ready_s, "llama-server": peer_ready_s}
        pids = {"ours": ours_pid, "llama-server": peer_pid}
        for who in SERVERS:
            got = replies[who]
            figures[who] = {
                "ready_s": round(ready[who], 2),
                "peak_rss_mb": (lambda mb: None if mb is None else round(mb, 1))(
                    peak_rss_mb(pids[who])
                ),
                "prompt_ms_per_token": median_of(
                    [per_token(r["prompt_ms"], r["prompt_n"]) for r in got]
                ),
                "generated_ms_per_token": median_of(
                    [per_token(r["predicted_ms"], r["predicted_n"]) for r in got]
                ),
                "completion_tokens": sum(r["completion_tokens"] or 0 for r in got),
            }
    echo(
        f"   {model}: "
        + "; ".join(
            f"{who} ready {figures[who]['ready_s']} s, {figures[who]['peak_rss_mb']} MB, "
            f"{figures[who]['generated_ms_per_token']} ms/generated token"
            for who in SERVERS
        )
    )
    return figures


def run(echo: Echo) -> Figures:
    models = [m for m in PACKAGED.values() if not m.missing()]
    load_before = load_average()
    rows = {m.name: {"parameters": m.parameters, **measure(m.name, echo)} for m in models}
    return {
        "models": rows,
        "requests": len(PROMPTS),
        "max_tokens": MAX_TOKENS,
        "threads": THREADS,
        "load_before": load_before,
        "load_after": load_average(),
    }


def render(f: Figures) -> list[str]:
    head = [
        "model", "parameters", "ready s (ours / llama-server)", "peak RSS MB",
        "ms per prompt token", "ms per generated token", "generated ours / theirs",
    ]  # fmt: skip
    rows = []
    for name, m in f["models"].items():
        a, b = m["ours"], m["llama-server"]
        gen = a["generated_ms_per_token"], b["generated_ms_per_token"]
        ratio = f" ({gen[0] / gen[1]:.2f}×)" if gen[0] and gen[1] else ""
        rows.append(
            [
                name,
                m["parameters"],
                f"{fmt(a['ready_s'])} / {fmt(b['ready_s'])}",
                f"{fmt(a['peak_rss_mb'], ',.0f')} / {fmt(b['peak_rss_mb'], ',.0f')}",
                f"{fmt(a['prompt_ms_per_token'])} / {fmt(b['prompt_ms_per_token'])}",
                f"{fmt(gen[0])} / {fmt(gen[1])}",
                ratio.strip(" ()") or "–",
            ]
        )
    return [
        "## What each packaged model costs to serve",
        "",
        f"Every installed packaged model on our llama backend and on llama.cpp's `llama-server` "
        f"(the same GGUF, `--threads {f['threads']}` each): time from process start to ready, "
        f"peak RSS of the server process, and medians over {f['requests']} chat requests "
        f"without tools (max_tokens {f['max_tokens']}, temperature 0), sent interleaved after "
        f"one warm-up request. The machine's 1-minute load average: {f.get('load_before', '–')} "
        f"before, {f.get('load_after', '–')} after. Each cell reads ours / llama-server.",
        "",
        table(head, rows),
    ]


DOCS_PAGE = Path("docs/findings.md")


def docs(f: Figures) -> list[tuple[Path, str, str]]:
    """docs/findings.md's table of what each packaged model costs to serve (ours /
    llama-server), from the same figures as bench.md's section."""
    head = ["model", "ready s", "peak RSS MB", "ms per prompt token", "ms per generated token"]
    rows = [
        [
            name,
            f"{fmt(m['ours']['ready_s'])} / {fmt(m['llama-server']['ready_s'])}",
            f"{fmt(m['ours']['peak_rss_mb'], ',.0f')} / "
            f"{fmt(m['llama-server']['peak_rss_mb'], ',.0f')}",
            f"{fmt(m['ours']['prompt_ms_per_token'])} / "
            f"{fmt(m['llama-server']['prompt_ms_per_token'])}",
            f"{fmt(m['ours']['generated_ms_per_token'])} / "
            f"{fmt(m['llama-server']['generated_ms_per_token'])}",
        ]
        for name, m in f["models"].items()
    ]
    return [(DOCS_PAGE, "ladder-cost", table(head, rows))]


PART = Part("ladder", run, render, docs)
