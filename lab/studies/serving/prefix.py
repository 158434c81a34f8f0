"""Prompt tokens evaluated per turn of a 6-turn conversation, prefix cache on and off."""

from __future__ import annotations

from typing import Any

import httpx

from evals.markdown import table
from evals.tasks import load_tasks
from harness.loop import SYSTEM_PROMPT
from lab.studies.serving.common import Echo, Figures, Part, server_process, verdict
from serve_local.models import QWEN_CODER
from serve_local.process import serve_command


def run(echo: Echo) -> Figures:
    questions = [t.question for t in load_tasks().tasks]
    runs: dict[str, list[dict[str, Any]]] = {}
    for label, extra in (("cache on", []), ("cache off", ["--no-prefix-cache"])):
        cmd = [*serve_command("llama", model=QWEN_CODER), *extra]
        with server_process(cmd) as (url, _, _):
            messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
            turns = []
            previous = 0
            for question in questions:
                messages.append({"role": "user", "content": question})
                response = httpx.post(
                    f"{url}/chat/completions",
                    timeout=600,
                    json={"model": "m", "messages": messages, "max_tokens": 48, "temperature": 0},
                )
                body = response.json()
                timings, prompt = body["timings"], body["usage"]["prompt_tokens"]
                turns.append(
                    {
                        "prompt_tokens": prompt,
                        "new_tokens": prompt - previous,
                        "prompt_n": timings["prompt_n"],
                        "cache_n": timings["cache_n"],
                        "prompt_ms": timings["prompt_ms"],
                    }
                )
                previous = prompt
                messages.append(
                    {"role": "assistant", "content": body["choices"][0]["message"]["content"] or ""}
                )
            runs[label] = turns
            echo(f"   {label}: prompt_n per turn {[t['prompt_n'] for t in turns]}")
    on = runs["cache on"][1:]
    # From turn 2 on, evaluated tokens should be the new tokens (plus the assistant reply's
    # re-rendered tail, a handful of tokens).
    excess = [t["prompt_n"] - t["new_tokens"] for t in on]
    return {
        "turns": runs,
        "excess_over_new_tokens": excess,
        "prompt_ms_on": sum(t["prompt_ms"] for t in runs["cache on"]),
        "prompt_ms_off": sum(t["prompt_ms"] for t in runs["cache off"]),
    }


def render(p: Figures) -> list[str]:
    pairs = zip(p["turns"]["cache on"], p["turns"]["cache off"], strict=True)
    rows = [
        [i, on["prompt_tokens"], on["new_tokens"], on["prompt_n"], on["cache_n"], off["prompt_n"]]
        for i, (on, off) in enumerate(pairs, start=1)
    ]
    head = [
        "turn",
        "prompt tokens",
        "new tokens",
        "evaluated (cache on)",
        "reused",
        "evaluated (cache off)",
    ]
    worst = max(p["excess_over_new_tokens"]) if p["excess_over_new_tokens"] else 0
    return [
        "## Prefix reuse over a 6-turn conversation",
        "",
        table(head, rows),
        "New tokens are the prompt's growth since the last turn; the previous reply's "
        "tokens are already in the cache from generating them, so with the cache on only "
        "the new user turn is evaluated.",
        "",
        f"- Target: from turn 2 on, evaluated ≈ new tokens. Largest excess over the "
        f"new tokens: {worst} tokens, {verdict(worst <= 8)}. Prompt time "
        f"{p['prompt_ms_on']:,.0f} ms with the cache vs {p['prompt_ms_off']:,.0f} ms "
        "without.",
        "",
    ]


PART = Part("prefix", run, render)
