"""Speculative decoding drafted from the prompt (``--draft prompt-lookup``) against plain
decoding: recorded agent turns replayed through two of our servers side by side, the same GGUF,
for each packaged model.

The turns are real requests an agent loop sent: every turn of the default model's six-task run
under the default preset and of the first tasks of its generated-set run (the transcripts
committed under ``results/runs/``), and a stratified sample of BFCL items (its functions as
tools). Each turn goes to both servers, interleaved (off then on, then on then off), greedy.
Per turn: the reply (text, calls, finish reason) of each, the server's own timings, the drafted
and kept tokens, and the wall time the client saw. Peak RSS is each server's high-water mark."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx

from evals.bfcl.bridge import BfclUnavailable, Checker
from evals.bfcl.items import DEFAULT_CATEGORIES, Item, sample
from evals.markdown import table
from evals.run.runner import RUNS
from lab.studies.serving.common import (
    MAX_TOKENS,
    TOOLS,
    Echo,
    Figures,
    Part,
    fmt,
    median_of,
    peak_rss_mb,
    per_token,
    server_process,
    verdict,
)
from lab.studies.serving.peer import load_average
from serve_local.models import DEFAULT_NAME, PACKAGED
from serve_local.process import serve_command

THREADS = 2
DRAFT_TOKENS = 10
# Committed transcripts of the default model under the default preset (all-helps).
SIX_TASKS = RUNS / "20261130-214336-fresh-clone-default.runs"
GENERATED = RUNS / "20261130-213246-gen-test-qwen2.5-coder-1.5b-all-helps.runs"
GENERATED_TASKS = 10
BFCL_PER_CATEGORY = 3
TARGET_RATIO = 0.75


def transcript_turns(folder: Path, tasks: int | None = None) -> list[dict[str, Any]]:
    """Every request a recorded run sent: the messages before each of its replies."""
    if not folder.is_dir():
        raise RuntimeError(f"{folder} is missing: the draft benchmark replays its transcripts")
    states = sorted(p for p in folder.glob("*-e1.json"))[:tasks]  # first epochs; not eval.json
    turns = []
    for path in states:
        messages = json.loads(path.read_text())["messages"]
        for i, message in enumerate(messages):
            if message["role"] == "assistant":
                source = f"{folder.name}/{path.stem}#{i}"
                turns.append({"source": source, "messages": messages[:i], "tools": TOOLS})
    return turns


def bfcl_turns(per_category: int, echo: Echo) -> list[dict[str, Any]]:
    """A stratified BFCL sample (seed 0) as requests, when the BFCL environment is there."""

    async def load() -> list[Item]:
        async with Checker(None) as checker:
            loaded = await checker.load(list(DEFAULT_CATEGORIES))
        return sample([Item.from_checker(i) for i in loaded["items"]], per_category, 0)

    try:
        items = asyncio.run(load())
    except BfclUnavailable as exc:  # no .venv-bfcl: the transcripts alone
        echo(f"   no BFCL sample ({exc}); `make bfcl-venv` adds it")
        return []
    return [{"source": f"bfcl/{i.id}", "messages": i.messages, "tools": i.tools} for i in items]


def _ask(url: str, turn: dict[str, Any]) -> dict[str, Any]:
    body = {
        "model": "any",
        "messages": turn["messages"],
        "tools": turn["tools"],
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }
    start = time.perf_counter()
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=900)
    wall_ms = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    reply = response.json()
    choice = reply["choices"][0]
    calls = [
        [c["function"]["name"], c["function"]["arguments"]]
        for c in choice["message"].get("tool_calls") or []
    ]
    return {
        "reply": [choice["message"].get("content"), calls, choice["finish_reason"]],
        "wall_ms": round(wall_ms, 1),
        **{k: v for k, v in (reply.get("timings") or {}).items()},
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def measure(model: str, turns: list[dict[str, Any]], echo: Echo) -> dict[str, Any]:
    base = serve_command("llama", model=model, threads=THREADS, log_level="warning")
    on_args = [*base, "--draft", "prompt-lookup", "--draft-tokens", str(DRAFT_TOKENS)]
    got: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    with (
        server_process([*base, "--draft", "off"]) as (off_url, _, off_pid),
        server_process(on_args) as (on_url, _, on_pid),
    ):
        urls = {"off": off_url, "on": on_url}
        for url in urls.values():  # the same warm start: the first turn's prompt cached
            _ask(url, turns[0])
        for n, turn in enumerate(turns):
            order = ("off", "on") if n % 2 == 0 else ("on", "off")
            for who in order:
                got[who].append(_ask(urls[who], turn))
        rss = {"off": peak_rss_mb(off_pid), "on": peak_rss_mb(on_pid)}
    differ = [
        turn["source"]
        for turn, a, b in zip(turns, got["off"], got["on"], strict=True)
        if a["reply"] != b["reply"]
    ]

    def side(who: str) -> dict[str, Any]:
        rows = got[who]
        return {
            "generated_ms_per_token": median_of(
                [per_token(r.get("predicted_ms"), r.get("predicted_n")) for r in rows]
            ),
            "prompt_ms_per_token": median_of(
                [per_token(r.get("prompt_ms"), r.get("prompt_n")) for r in rows]
            ),
            "wall_ms_per_turn": median_of([r["wall_ms"] for r in rows]),
            "completion_tokens": sum(r.get("predicted_n") or 0 for r in rows),
            "peak_rss_mb": _rounded(rss[who]),
        }

    drafted = [r.get("draft_n") or 0 for r in got["on"]]
    kept = [r.get("draft_n_accepted") or 0 for r in got["on"]]
    figures: dict[str, Any] = {
        "turns": len(turns),
        "identical": len(turns) - len(differ),
        "differ": differ,
        "off": side("off"),
        "on": side("on"),
        "drafted_per_turn": median_of([float(d) for d in drafted]),
        "kept_per_turn": median_of([float(k) for k in kept]),
        "kept_share": round(sum(kept) / sum(drafted), 3) if sum(drafted) else None,
    }
    a, b = figures["off"], figures["on"]
    echo(
        f"   {model}: identical {figures['identical']}/{len(turns)}; ms/generated token "
        f"{a['generated_ms_per_token']} off, {b['generated_ms_per_token']} on; kept "
        f"{sum(kept)}/{sum(drafted)} drafted tokens"
    )
    return figures


def run(echo: Echo) -> Figures:
    turns = [
        *transcript_turns(SIX_TASKS),
        *transcript_turns(GENERATED, GENERATED_TASKS),
        *bfcl_turns(BFCL_PER_CATEGORY, echo),
    ]
    echo(f"   {len(turns)} recorded turns")
    models = [m.name for m in PACKAGED.values() if not m.missing()]
    load_before = load_average()
    rows = {name: measure(name, turns, echo) for name in models}
    default = rows.get(DEFAULT_NAME)
    ratio = None
    if default:
        off, on = (default[who]["generated_ms_per_token"] for who in ("off", "on"))
        ratio = round(on / off, 3) if off and on else None
    identical_everywhere = all(r["identical"] == r["turns"] for r in rows.values())
    return {
        "models": rows,
        "sources": {
            "six_tasks": SIX_TASKS.name,
            "generated": f"{GENERATED.name} (first {GENERATED_TASKS} tasks)",
            "bfcl": f"{BFCL_PER_CATEGORY} per category, seed 0",
        },
        "max_tokens": MAX_TOKENS,
        "threads": THREADS,
        "draft_tokens": DRAFT_TOKENS,
        "default_model": DEFAULT_NAME,
        "default_ratio": ratio,
        "default_identical": default is not None and default["identical"] == default["turns"],
        "identical_everywhere": identical_everywhere,
        "load_before": load_before,
        "load_after": load_average(),
    }


def render(f: Figures) -> list[str]:
    head = [
        "model", "identical replies", "ms per generated token (off / on)", "on / off",
        "drafted / kept per turn", "kept share", "ms per prompt token (off / on)",
        "wall per turn ms (off / on)", "peak RSS MB (off / on)",
    ]  # fmt: skip
    rows = []
    for name, m in f["models"].items():
        a, b = m["off"], m["on"]
        gen = a["generated_ms_per_token"], b["generated_ms_per_token"]
        rows.append(
            [
                name,
                f"{m['identical']}/{m['turns']}",
                f"{fmt(gen[0])} / {fmt(gen[1])}",
                f"{gen[1] / gen[0]:.2f}×" if gen[0] and gen[1] else "–",
                f"{fmt(m['drafted_per_turn'], '.0f')} / {fmt(m['kept_per_turn'], '.0f')}",
                fmt(m["kept_share"], ".0%"),
                f"{fmt(a['prompt_ms_per_token'])} / {fmt(b['prompt_ms_per_token'])}",
                f"{fmt(a['wall_ms_per_turn'], ',.0f')} / {fmt(b['wall_ms_per_turn'], ',.0f')}",
                f"{fmt(a['peak_rss_mb'], ',.0f')} / {fmt(b['peak_rss_mb'], ',.0f')}",
            ]
        )
    differ = [
        f"- {name}: " + ", ".join(f"`{s}`" for s in m["differ"])
        for name, m in f["models"].items()
        if m["differ"]
    ]
    ratio = f.get("default_ratio")
    met = ratio is not None and ratio <= TARGET_RATIO and f["default_identical"]
    on_by_default = (
        f["identical_everywhere"] and ratio is not None and ratio < 1 and f["default_identical"]
    )
    sources = f["sources"]
    return [
        "## Speculative decoding from the prompt (`--draft prompt-lookup`)",
        "",
        f"Recorded agent turns replayed through two of our llama servers side by side (the same "
        f"GGUF, `--threads {f['threads']}` each), draft off and draft on "
        f"(`--draft-tokens {f['draft_tokens']}`), interleaved, greedy, max_tokens "
        f"{f['max_tokens']}: every turn of `{sources['six_tasks']}`, of `{sources['generated']}` "
        f"and a BFCL sample ({sources['bfcl']}). A reply is identical when its text, calls and "
        f"finish reason are. Medians per turn. The machine's 1-minute load average: "
        f"{f.get('load_before', '–')} before, {f.get('load_after', '–')} after.",
        "",
        table(head, rows),
        "",
        f"Target for the default model (`{f['default_model']}`): at most "
        f"{TARGET_RATIO:.2f}× the ms per generated token with every reply identical: "
        f"{verdict(met)} ({fmt(ratio, '.3f')}×, identical: {f['default_identical']}). "
        + (
            "These figures warrant the draft on by default."
            if on_by_default
            else "The draft stays off by default: it is on only when every recorded reply is "
            "identical and the default model's tokens come faster."
        ),
        "",
        *(["Turns whose replies differ:", "", *differ, ""] if differ else []),
    ]


DOCS_PAGE = Path("docs/server.md")


def docs(f: Figures) -> list[tuple[Path, str, str]]:
    """docs/server.md's drafting table, from the same figures as bench.md's section."""
    head = ["model", "identical replies", "ms per generated token, off → on",
            "drafted tokens kept"]  # fmt: skip
    rows = []
    for name, m in f["models"].items():
        off, on = m["off"]["generated_ms_per_token"], m["on"]["generated_ms_per_token"]
        ratio = f" ({on / off:.2f}×)" if off and on else ""
        rows.append(
            [
                name + (" (default)" if name == DEFAULT_NAME else ""),
                f"{m['identical']}/{m['turns']}",
                f"{fmt(off)} → {fmt(on)}{ratio}",
                "–" if m["kept_share"] is None else f"{100 * m['kept_share']:.0f} %",
            ]
        )
    return [(DOCS_PAGE, "draft-table", table(head, rows))]


PART = Part("draft", run, render, docs)
