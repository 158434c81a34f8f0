"""What constraining tool calls costs per generated token: our server with the call grammar
(llguidance) against the same server without it, on identical requests; the grammar's own work
per token; and llama.cpp's GBNF grammar sampler on the same call schema, for the choice."""

from __future__ import annotations

import time
from typing import Any

import httpx

from evals.markdown import table
from evals.tasks import load_tasks
from harness.loop import SYSTEM_PROMPT
from harness.tools import default_tools
from lab.studies.serving.common import TOOLS, Echo, Figures, Part, median, server_process, verdict
from serve_local.backends.llama import llama_vocabulary
from serve_local.grammar_schemas import call_schema
from serve_local.models import QWEN_CODER, resolve
from serve_local.process import serve_command
from serve_local.toolgrammar import CallGrammar, CallPolicy

ROUNDS = 3
TARGET = 1.10  # per generated token, grammar on / off
VARIANTS = (("off", "auto"), ("lazy", "auto"), ("lazy", "required"))


def _request(question: str, choice: str) -> dict[str, Any]:
    return {
        "model": QWEN_CODER,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ],
        "tools": TOOLS,
        "tool_choice": choice,
        "temperature": 0,
        "max_tokens": 128,
    }


def _serve(mode: str) -> Any:
    # Every prompt evaluated whole, so the requests differ only in what is generated.
    return server_process(
        serve_command("llama", model=QWEN_CODER, tool_grammar=mode, no_prefix_cache=True, threads=2)
    )


def _per_token(url: str, question: str, choice: str) -> tuple[float, int, bool]:
    reply = httpx.post(f"{url}/chat/completions", json=_request(question, choice), timeout=600)
    body = reply.json()
    t = body["timings"]
    called = bool(body["choices"][0]["message"].get("tool_calls"))
    return t["predicted_ms"] / max(t["predicted_n"], 1), t["predicted_n"], called


def _serving(questions: list[str], echo: Echo) -> dict[str, Any]:
    rows: dict[str, dict[str, list[Any]]] = {
        f"{m}/{c}": {"ms_per_token": [], "tokens": [], "calls": []} for m, c in VARIANTS
    }
    with _serve("off") as (off_url, _, _), _serve("lazy") as (lazy_url, _, _):
        urls = {"off": off_url, "lazy": lazy_url}
        for _ in range(ROUNDS):  # interleaved, so drift in the machine's speed hits all alike
            for question in questions:
                for mode, choice in VARIANTS:
                    ms, n, called = _per_token(urls[mode], question, choice)
                    row = rows[f"{mode}/{choice}"]
                    row["ms_per_token"].append(round(ms, 3))
                    row["tokens"].append(n)
                    row["calls"].append(called)
    for name, row in rows.items():
        echo(f"   {name}: {median(row['ms_per_token']):.2f} ms per generated token")
    return rows


def _mask_cost(questions: list[str]) -> dict[str, Any]:
    """The grammar's own work per token (mask plus advance), replaying constrained replies."""
    import llama_cpp

    llm = llama_cpp.Llama(str(resolve(QWEN_CODER).path), vocab_only=True, verbose=False)
    grammar = CallGrammar(llama_vocabulary(llm))
    tools = {t.name: t.parameters for t in default_tools()}
    build_ms, step_us = [], []
    for question in questions:
        call = f'<tool_call>\n{{"name": "read_file", "arguments": {{"path": "{question[:12]}"}}}}'
        ids = grammar.tokenizer.tokenize_str(call + "\n</tool_call>", parse_special=True)
        started = time.perf_counter()
        constraint = grammar.constraint(CallPolicy(tools, "required", False))
        build_ms.append((time.perf_counter() - started) * 1000)
        text = ""
        for token in ids:
            started = time.perf_counter()
            constraint.allowed()
            text += grammar.tokenizer.decode_str([token])
            constraint.observe(token, text)
            step_us.append((time.perf_counter() - started) * 1e6)
    return {"matcher_build_ms": median(build_ms), "per_token_us": median(step_us)}


def _gbnf(questions: list[str]) -> dict[str, Any]:
    """llama.cpp's own grammar sampler (GBNF from the same call schema) in llama-cpp-python,
    against no grammar, on the same prompts: its cost per generated token."""
    import json

    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    llm = llama_cpp.Llama(
        str(resolve(QWEN_CODER).path), n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False
    )
    schema = call_schema({t.name: t.parameters for t in default_tools()})
    schema.pop("x-guidance")
    gbnf = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    out: dict[str, list[float]] = {"none": [], "gbnf": []}
    for _ in range(ROUNDS):
        for question in questions:
            prompt = llm.tokenize(
                f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n{question}"
                "<|im_end|>\n<|im_start|>assistant\n".encode(),
                special=True,
            )
            for name, grammar in (("none", None), ("gbnf", gbnf)):
                llm.reset()  # type: ignore[no-untyped-call]
                n, first, end = 0, 0.0, 0.0
                for token in llm.generate(prompt, top_k=1, temp=0.0, grammar=grammar):
                    now = time.perf_counter()
                    first = first or now
                    end, n = now, n + 1
                    if llm.token_eos() == token or n >= 48:
                        break
                out[name].append((end - first) * 1000 / max(n - 1, 1))
    return {name: median(values) for name, values in out.items()}


def run(echo: Echo) -> Figures:
    questions = [t.question for t in load_tasks().tasks]
    serving = _serving(questions, echo)
    off = median(serving["off/auto"]["ms_per_token"]) or 1.0
    figures: Figures = {
        "serving": serving,
        "ratio_lazy_auto": (median(serving["lazy/auto"]["ms_per_token"]) or 0.0) / off,
        "ratio_lazy_required": (median(serving["lazy/required"]["ms_per_token"]) or 0.0) / off,
        "mask": _mask_cost(questions),
        "gbnf": _gbnf(questions),
    }
    gbnf = figures["gbnf"]
    figures["ratio_gbnf"] = (gbnf["gbnf"] or 0.0) / (gbnf["none"] or 1.0)
    echo(
        f"   grammar on/off per token: auto {figures['ratio_lazy_auto']:.3f}, required "
        f"{figures['ratio_lazy_required']:.3f}; GBNF/none {figures['ratio_gbnf']:.3f}"
    )
    return figures


def render(g: Figures) -> list[str]:
    rows = []
    for name, row in g["serving"].items():
        mode, choice = name.split("/")
        rows.append(
            [
                mode,
                choice,
                f"{median(row['ms_per_token']):.2f}",
                f"{median(row['tokens']):.0f}",
                f"{sum(row['calls'])}/{len(row['calls'])}",
            ]
        )
    worst = max(g["ratio_lazy_auto"], g["ratio_lazy_required"])
    mask = g["mask"]
    return [
        "## Constrained tool calls: cost per generated token",
        "",
        f"Our llama backend with `--tool-grammar lazy` (llguidance) and `off`, two servers side "
        f"by side, prefix cache off, the six task questions with the four tools, {ROUNDS} "
        "interleaved rounds; medians of `predicted_ms / predicted_n` from the server's timings.",
        "",
        table(["grammar", "tool_choice", "ms per token", "tokens", "replies with a call"], rows),
        f"Per generated token, grammar on / off: {g['ratio_lazy_auto']:.3f} under `auto`, "
        f"{g['ratio_lazy_required']:.3f} under `required` (target ≤ {TARGET:.2f}: "
        f"{verdict(worst <= TARGET)}). The grammar's own work: {mask['per_token_us']:.0f} µs "
        f"per token (mask and advance), {mask['matcher_build_ms']:.1f} ms to build a request's "
        "matcher.",
        "",
        f"For the choice of library: llama.cpp's GBNF sampler (`LlamaGrammar.from_json_schema` "
        f"on the same call schema, in llama-cpp-python directly) costs "
        f"{g['gbnf']['gbnf']:.2f} ms per token against {g['gbnf']['none']:.2f} without "
        f"(ratio {g['ratio_gbnf']:.3f}), and serves the llama backend only.",
        "",
    ]


PART = Part("grammar", run, render)
