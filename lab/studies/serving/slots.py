"""Latency per turn against throughput as slots grow (``make bench BENCH_PARTS=slots``).

The default model on the 60-task generated test set, through the real eval runner, on our
server with ``--slots N`` and on llama.cpp's ``llama-server --parallel N`` (the same GGUF,
the same threads), N = 1, 2, 4, 8, each configuration in a fresh server, the two engines
side by side at each N. The eval sends as many task runs at once as the server has slots.
Per configuration: task runs per minute, median and p90 latency per turn, generated tokens
per second, the server's peak RSS, the first turn's share of cached prompt tokens, and the
verdicts against one slot task by task (where they differ, the turn and token where the two
transcripts part). Before the servers, what one ``llama_decode`` costs per token as the batch
grows: the ceiling batching has on this machine.

Run files are kept under ``results/slots/`` (state files beside them) for the transcripts.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from evals.record import RunRecord, read_runs
from evals.record.files import kept_file, read_text
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from harness.presets import preset
from lab.studies.serving.common import (
    Echo,
    Figures,
    median_of,
    peak_rss_mb,
    per_token,
    server_process,
)
from lab.studies.serving.peer import PROMPTS, THREADS, WARM, load_average, send
from serve_local import llama_server
from serve_local.backends.generation import DEFAULT_MAX_TOKENS
from serve_local.backends.llama import LlamaBackend
from serve_local.models import DEFAULT_NAME, resolve
from serve_local.process import serve_command

LEVELS = (1, 2, 4, 8)
TASKS = Path("evals/tasks/gen-test-s1000-n60.json")
PRESET = "penalized"
MAX_TURNS = 4  # as the scale part: a task the engine cannot finish costs four turns, not eight
OUT = Path("results/slots")
BATCHES = (1, 2, 4, 8, 16, 32)
ENGINES = ("ours", "llama-server")
TARGET_SPEEDUP = 2.0  # task runs per minute at 4 slots over 1 slot, ours
TARGET_PER_TOKEN = 1.02  # ours at 1 slot, ms per generated token, against the one-slot path
# llama-server through the eval too: it makes no tool call from this model (docs/scale.md),
# so every task runs to the turn cap with replies cut at 256 tokens, about a minute a task on
# two cores, an hour per slot count. Off by default: the same requests compare the engines.
PEER_EVAL = False


def decode_cost(model: str = DEFAULT_NAME, threads: int = THREADS) -> list[dict[str, Any]]:
    """Milliseconds per token of one ``llama_decode`` of B tokens, one per sequence (eight
    sequences of a 256-token prompt each; beyond eight, several tokens per sequence), median
    of five: what a batched generated token costs against one alone."""
    backend = LlamaBackend(resolve(model), n_ctx=1024, n_threads=threads, slots=8)
    backend.load()
    engine = backend.engine
    assert engine is not None
    try:
        return [dict(row) for row in engine.time_decode(BATCHES)]
    finally:
        engine.close()


def _command(engine: str, slots: int) -> list[str]:
    if engine == "ours":
        return serve_command(
            "llama", model=DEFAULT_NAME, threads=THREADS, slots=slots, log_level="warning"
        )
    # llama-server's own default cap is the slot's whole context; ours is given instead.
    cmd = llama_server.command(DEFAULT_NAME, None, threads=THREADS, slots=slots)
    return [*cmd, "--n-predict", str(DEFAULT_MAX_TOKENS)]


def _p90(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def figures_of(records: list[RunRecord], wall_s: float) -> dict[str, Any]:
    """What one configuration's run file says, with the eval's own wall time."""
    turns = [ms for r in records for ms in r.turn_latency_ms]
    firsts = [r.turn_timings[0] for r in records if r.turn_timings and r.turn_timings[0]]
    cached = sum(int(t.get("cache_n") or 0) for t in firsts)
    evaluated = sum(int(t.get("prompt_n") or 0) for t in firsts)
    generated = sum(r.completion_tokens for r in records)
    timings = [t for r in records for t in (r.turn_timings or []) if t]
    return {
        # The server's own figures per turn: what a token costs, whatever the task did.
        "ms_per_generated": median_of(
            [per_token(t.get("predicted_ms"), t.get("predicted_n")) for t in timings]
        ),
        "ms_per_prompt": median_of(
            [per_token(t.get("prompt_ms"), t.get("prompt_n")) for t in timings]
        ),
        "task_runs": len(records),
        "errors": sum(r.status == "error" for r in records),
        "correct": sum(bool(r.correct) for r in records),
        "wall_s": round(wall_s, 1),
        "runs_per_min": round(len(records) / wall_s * 60, 2) if wall_s else None,
        "turn_ms_median": round(statistics.median(turns), 1) if turns else None,
        "turn_ms_p90": round(_p90(turns) or 0, 1) if turns else None,
        "tokens_per_s": round(generated / wall_s, 2) if wall_s else None,
        "first_turn_cached": round(cached / (cached + evaluated), 3) if firsts else None,
        "turns": sum(r.turns for r in records),
    }


def _reply_texts(run_file: Path, record: RunRecord) -> list[str]:
    """Each reply of a task run as text (its content, then its calls)."""
    path = kept_file(run_file, f"{record.run_id}.json") if record.run_id else None
    if path is None:
        return []
    messages = json.loads(read_text(path)).get("messages", [])
    # A call's id is drawn at random on every run: only its name and arguments are compared.
    return [
        (m.get("content") or "")
        + json.dumps([c.get("function") for c in m.get("tool_calls") or []], sort_keys=True)
        for m in messages
        if m.get("role") == "assistant"
    ]


def parting(a: list[str], b: list[str], tokenize: Any) -> dict[str, Any]:
    """The first reply where two transcripts differ, and the token where they part."""
    for turn, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            tx, ty = tokenize(x), tokenize(y)
            at = next((i for i, (p, q) in enumerate(zip(tx, ty, strict=False)) if p != q), None)
            at = min(len(tx), len(ty)) if at is None else at
            return {"turn": turn, "token": at, "a": x[:160], "b": y[:160]}
    return {"turn": min(len(a), len(b)) + 1, "token": 0, "a": "", "b": ""}


def agreement(base: Path, other: Path, tokenize: Any) -> dict[str, Any]:
    """Verdicts of ``other`` against ``base`` (one slot) task by task."""
    one = {r.task_id: r for r in read_runs(base)}
    many = {r.task_id: r for r in read_runs(other)}
    shared = sorted(one.keys() & many.keys())
    differ = [t for t in shared if bool(one[t].correct) != bool(many[t].correct)]
    answers = sum(one[t].answer != many[t].answer for t in shared)
    return {
        "tasks": len(shared),
        "same_verdict": len(shared) - len(differ),
        "same_answer": len(shared) - answers,
        "differing": [
            {
                "task": t,
                "one_slot": bool(one[t].correct),
                "slots": bool(many[t].correct),
                **parting(_reply_texts(base, one[t]), _reply_texts(other, many[t]), tokenize),
            }
            for t in differ
        ],
    }


def replay(url: str, slots: int) -> dict[str, Any]:
    """The same requests on every engine: the eight paragraph prompts of the ``peer`` part
    twice (128 tokens each, greedy), ``slots`` in flight: generated tokens per second and the
    median request's wall time."""
    from concurrent.futures import ThreadPoolExecutor

    prompts = [*PROMPTS, *PROMPTS]
    started = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:
        replies = list(pool.map(lambda p: send(url, p, 128), prompts))
    wall_s = time.perf_counter() - started
    generated = sum(int(r["predicted_n"] or 0) for r in replies)
    return {
        "requests": len(replies),
        "tokens_per_s": round(generated / wall_s, 2),
        "request_ms_median": round(statistics.median(r["wall_ms"] for r in replies)),
    }


def agree_all(rows: list[dict[str, Any]], first: int, tokenize: Any) -> None:
    """Each row's verdicts against its engine's row at ``first`` slots (from the run files)."""
    for row in rows:
        base = next(r for r in rows if r["engine"] == row["engine"] and r["slots"] == first)
        if row is not base and row["task_runs"] and base["task_runs"]:
            row["agreement"] = agreement(Path(base["run_file"]), Path(row["run_file"]), tokenize)


def rescored(figures: Figures) -> Figures:
    """The verdicts again from the committed run files as they read now (after ``evals
    rescore``): each row's count of right answers and its agreement with one slot. What was
    measured (times, tokens, memory) stays."""
    rows = [dict(row) for row in figures["rows"]]
    found = [r for r in rows if r.get("run_file") and Path(r["run_file"]).exists()]
    if not found:
        return figures
    for row in found:
        row["correct"] = sum(bool(r.correct) for r in read_runs(Path(row["run_file"])))
    agree_all(rows, figures["levels"][0], vocabulary_tokenizer())
    return {**figures, "rows": rows}


def vocabulary_tokenizer() -> Any:
    """The default model's tokenizer (its vocabulary only), for where transcripts part."""
    import llama_cpp

    vocab = llama_cpp.Llama(str(resolve(DEFAULT_NAME).path), vocab_only=True, verbose=False)
    return lambda text: list(vocab.tokenize(text.encode(), add_bos=False, special=True))


def measure(
    engine: str,
    slots: int,
    echo: Echo,
    out: Path = OUT,
    tasks: Path = TASKS,
    with_eval: bool = True,
) -> dict[str, Any]:
    """One configuration: a fresh server, warmed, the same requests replayed, then (unless
    ``with_eval`` is off) the task set at as many in flight as slots."""
    run_file = out / f"{engine}-s{slots}.jsonl"
    run_file.unlink(missing_ok=True)
    load_before = load_average()
    with server_process(_command(engine, slots)) as (url, ready_s, pid):
        send(url, WARM, 16)
        same_requests = replay(url, slots)
        if not with_eval:
            rss = peak_rss_mb(pid)
            row = {
                "engine": engine,
                "slots": slots,
                "task_runs": 0,
                "peak_rss_mb": None if rss is None else round(rss),
                "replay": same_requests,
                "ready_s": round(ready_s, 1),
                "load_before": load_before,
                "load_after": load_average(),
            }
            echo(f"   {engine} s{slots}: same requests {same_requests['tokens_per_s']} tokens/s")
            return row
        settings = EvalSettings(
            serving=Serving(base_url=url),
            tasks=tasks,
            out=run_file,
            loop=eval_loop(max_turns=MAX_TURNS),
            preset=preset(PRESET),
            label=f"slots {engine} s{slots}",
        )
        started = time.monotonic()
        asyncio.run(run_eval(settings, echo=lambda line: None))
        wall_s = time.monotonic() - started
        rss = peak_rss_mb(pid)
    row = {
        "engine": engine,
        "slots": slots,
        **figures_of(read_runs(run_file), wall_s),
        "peak_rss_mb": None if rss is None else round(rss),
        "replay": same_requests,
        "ready_s": round(ready_s, 1),
        "load_before": load_before,
        "load_after": load_average(),
        "run_file": str(run_file),
    }
    echo(
        f"   {engine} s{slots}: {row['runs_per_min']} task runs/min, turn median "
        f"{row['turn_ms_median']} ms, {row['correct']}/{row['task_runs']} correct"
    )
    return row


def run(
    echo: Echo,
    levels: tuple[int, ...] = LEVELS,
    engines: tuple[str, ...] = ENGINES,
    out: Path = OUT,
    tasks: Path = TASKS,
) -> Figures:
    if "llama-server" in engines:
        _command("llama-server", 1)  # not built: fails before anything runs

    echo("   llama_decode per token as the batch grows")
    batches = decode_cost()
    out.mkdir(parents=True, exist_ok=True)
    # Each configuration's row is kept as it finishes: a rerun measures only what is missing.
    kept_rows = out / "rows.json"
    done = json.loads(kept_rows.read_text()) if kept_rows.exists() else {}
    rows = []
    for n in levels:
        for e in engines:
            key = f"{e}-s{n}"
            with_eval = e == "ours" or PEER_EVAL
            if key not in done or done[key].get("tasks") != str(tasks):
                done[key] = {**measure(e, n, echo, out, tasks, with_eval), "tasks": str(tasks)}
                kept_rows.write_text(json.dumps(done, indent=1) + "\n")
            else:
                echo(f"   {key}: kept from {kept_rows}")
            rows.append(done[key])
    tokenize = vocabulary_tokenizer()
    agree_all(rows, levels[0], tokenize)
    figures: Figures = {
        "model": DEFAULT_NAME,
        "tasks": str(tasks),
        "preset": PRESET,
        "max_turns": MAX_TURNS,
        "threads": THREADS,
        "levels": list(levels),
        "decode": batches,
        "rows": rows,
    }
    figures["plot"] = str(plot(figures, Path("results/plots/slots.png")))
    return figures


def plot(figures: Figures, path: Path) -> Path:
    """Left: median latency per turn against task runs per minute (the eval), one line per
    engine that ran it; right: median request time against generated tokens per second (the
    same requests on each engine). Each point is labelled with its slot count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    engines = list(dict.fromkeys(r["engine"] for r in figures["rows"]))
    for engine in engines:
        rows = [r for r in figures["rows"] if r["engine"] == engine]
        evals = [r for r in rows if r.get("runs_per_min")]

        def eval_x(r: dict[str, Any]) -> float:
            return float(r["runs_per_min"])

        def eval_y(r: dict[str, Any]) -> float:
            return float(r["turn_ms_median"]) / 1000

        def same_x(r: dict[str, Any]) -> float:
            return float(r["replay"]["tokens_per_s"])

        def same_y(r: dict[str, Any]) -> float:
            return float(r["replay"]["request_ms_median"]) / 1000

        panels = ((left, evals, eval_x, eval_y), (right, rows, same_x, same_y))
        for ax, points, x, y in panels:
            if not points:
                continue
            ax.plot([x(r) for r in points], [y(r) for r in points], marker="o", label=engine)
            for r in points:
                ax.annotate(str(r["slots"]), (x(r), y(r)), textcoords="offset points",
                            xytext=(4, 4))  # fmt: skip
    left.set_xlabel("task runs per minute")
    left.set_ylabel("median latency per turn (s)")
    left.set_title(f"the eval: {Path(figures['tasks']).stem}")
    right.set_xlabel("generated tokens per second")
    right.set_ylabel("median request time (s)")
    right.set_title("the same requests on each engine")
    for ax in (left, right):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(f"{figures['model']}: slots {', '.join(map(str, figures['levels']))}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
