"""Eval throughput with the real eval runner (``evals.run.runner.run_eval``) as task runs in flight
(``concurrency``) grow: (a) against the scripted provider with a fixed latency per reply, where
every configuration must give the same records; (b) against a real model on our server (one
request decoded at a time) and on llama.cpp's llama-server with four slots. Run files go to a
temporary folder and are read back with ``evals.record``."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.markdown import table
from evals.record import RunRecord, read_runs
from evals.report.summary import summarize
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.tasks import DEFAULT_TASKS, load_tasks
from harness.presets import PLAIN, preset
from lab.studies.serving.common import Echo, Figures, Part, server_process, verdict
from lab.studies.serving.peer import WARM, llama_server_args, load_average, ours_args, send
from serve_local.backends.generation import DEFAULT_MAX_TOKENS
from serve_local.models import QWEN_CODER
from serve_local.process import serve_command

ORACLE = "scripted:oracle"
SCRIPTED_EPOCHS = 10
SCRIPTED_LATENCY_MS = 200.0
SCRIPTED_LEVELS = (1, 4, 16)
TARGET = 10.0  # speedup of the highest concurrency over concurrency 1, scripted provider
REAL_LEVELS = (1, 4)
REAL_PRESET = "penalized"
REAL_MAX_TURNS = 4
REAL_SLOTS = 4
# What a record says about the task run itself, as opposed to when and how fast it ran.
OUTCOME = (
    "status", "turns", "tool_runs", "prompt_tokens", "completion_tokens", "answer", "correct",
)  # fmt: skip


def outcomes(records: list[RunRecord]) -> dict[str, list[Any]]:
    """Each task run's outcome, keyed by ``task_id eEPOCH``, timing fields left out."""
    return {f"{r.task_id} e{r.epoch}": [getattr(r, k) for k in OUTCOME] for r in records}


def differing(a: list[RunRecord], b: list[RunRecord]) -> list[str]:
    """The task runs (``task_id eEPOCH``) whose outcomes differ between two run files."""
    x, y = outcomes(a), outcomes(b)
    return sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))


def _quiet(echo: Echo, prefix: str) -> Echo:
    """The runner's echo without its per-task lines: only its total line, indented."""
    return lambda line: echo(f"   {prefix}: {line}") if line.startswith("TOTAL") else None


def over_levels(
    url: str,
    model: str,
    levels: Sequence[int],
    folder: Path,
    echo: Echo,
    *,
    name: str,
    epochs: int = 1,
    max_turns: int | None = 10,
    preset_name: str = PLAIN,
) -> Figures:
    """The task set through ``run_eval`` once per concurrency level, one after another; each
    level's wall seconds, rate, speedup over the first level, and whether its records are the
    same as the first level's (timing fields aside)."""
    rows: list[dict[str, Any]] = []
    first: list[RunRecord] = []
    for concurrency in levels:
        settings = EvalSettings(
            serving=Serving(base_url=url, model=model, concurrency=concurrency),
            epochs=epochs,
            loop=eval_loop(max_turns=max_turns),
            preset=preset(preset_name),
            out=folder / f"{name}-c{concurrency}.jsonl",
            label=f"{name}-c{concurrency}",
        )
        load = load_average()
        start = time.perf_counter()
        run_file = asyncio.run(run_eval(settings, echo=_quiet(echo, f"{name} c{concurrency}")))
        wall_s = time.perf_counter() - start
        records = read_runs(run_file)
        summary = summarize(records)
        first = first or records
        changed = differing(first, records)
        rows.append(
            {
                "concurrency": concurrency,
                "wall_s": round(wall_s, 2),
                "task_runs": len(records),
                "runs_per_s": round(len(records) / wall_s, 3),
                "speedup": round(rows[0]["wall_s"] / wall_s, 2) if rows else 1.0,
                "turns": summary["turns"],
                "tool_runs": summary["tool_runs"],
                "length_turns": sum((r.turn_finish_reasons or []).count("length") for r in records),
                "mean_turn_ms": summary["mean_turn_ms"] and round(summary["mean_turn_ms"], 1),
                "correct": summary["correct"],
                "not_run": summary["not_run"],
                "same_records": not changed,
                "differing": changed,
                "server_software": sorted({str(r.server_software) for r in records}),
                "load_before": load,
            }
        )
        echo(
            f"   {name} c{concurrency}: {wall_s:.1f} s, {len(records)} task runs, "
            f"speedup {rows[-1]['speedup']}x, same records as c{levels[0]}: {not changed}"
        )
    return {
        "name": name,
        "model": model,
        "epochs": epochs,
        "max_turns": max_turns,
        "preset": preset_name,
        "rows": rows,
        "speedup": rows[-1]["speedup"],
        "same_records": all(r["same_records"] for r in rows),
        "server_software": sorted({s for r in rows for s in r["server_software"]}),
    }


def scripted(
    epochs: int = SCRIPTED_EPOCHS,
    latency_ms: float = SCRIPTED_LATENCY_MS,
    levels: Sequence[int] = SCRIPTED_LEVELS,
    echo: Echo = print,
) -> Figures:
    """The scripted provider (``scripted:oracle``, ``latency_ms`` per reply) at each level."""
    cmd = serve_command("scripted", latency_ms=latency_ms, log_level="warning")
    with (
        server_process(cmd) as (url, _, _),
        tempfile.TemporaryDirectory(prefix="bench-scale-") as folder,
    ):
        figures = over_levels(
            url, ORACLE, levels, Path(folder), echo, name="scripted", epochs=epochs
        )
    return {
        **figures,
        "tasks": len(load_tasks(DEFAULT_TASKS).tasks),
        "latency_ms": latency_ms,
        "target": TARGET,
    }


def real(echo: Echo, peer_args: list[str]) -> Figures:
    """The six tasks once on the real model, c1 then c4: our server, then llama-server. A
    request without max_tokens gets ours's default cap on both: llama-server is given it
    (``--n-predict``) instead of its own, which is to generate until the slot's context is
    full. (The loop sends the preset's cap on every turn; this holds for any other request.)"""
    capped = [*peer_args, "--n-predict", str(DEFAULT_MAX_TOKENS)]
    servers = (("ours", ours_args(), 1), ("llama-server", capped, REAL_SLOTS))
    found = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as folder:
        for name, cmd, slots in servers:
            with server_process(cmd) as (url, _, _):
                send(url, WARM, 16)
                figures = over_levels(
                    url, QWEN_CODER, REAL_LEVELS, Path(folder), echo, name=name,
                    max_turns=REAL_MAX_TURNS, preset_name=REAL_PRESET,
                )  # fmt: skip
            found.append({**figures, "slots": slots})
    return {"servers": found, "default_max_tokens": DEFAULT_MAX_TOKENS}


def run(echo: Echo) -> Figures:
    peer_args = llama_server_args(slots=REAL_SLOTS)  # fails first when it is not built
    return {"scripted": scripted(echo=echo), "real": real(echo, peer_args)}


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _num(value: float | None, spec: str = ",.0f") -> str:
    return "–" if value is None else format(value, spec)


def _same(row: dict[str, Any], first: int) -> str:
    if row["same_records"]:
        return "yes"
    return f"no: {len(row['differing'])} task runs differ from c{first}"


def render_scripted(s: Figures) -> list[str]:
    first = s["rows"][0]["concurrency"]
    rows = [
        [
            r["concurrency"],
            r["task_runs"],
            f"{r['wall_s']:.2f}",
            f"{r['runs_per_s']:.2f}",
            f"{r['speedup']:.2f}×",
            r["correct"],
            _same(r, first),
            _num(r.get("load_before"), ".2f"),
        ]
        for r in s["rows"]
    ]
    top = s["rows"][-1]
    head = [
        "concurrency", "task runs", "wall s", "task runs/s", f"speedup over c{first}",
        "correct", f"same records as c{first}", "load average before",
    ]  # fmt: skip
    return [
        f"(a) The scripted provider (`{s['model']}`, {s['latency_ms']:g} ms before each reply), "
        f"the {s['tasks']} tasks × {s['epochs']} epochs = {top['task_runs']} task runs, at each "
        "concurrency one after another.",
        "",
        table(head, rows),
        f"- Target speedup ≥ {s['target']:g}× at concurrency {top['concurrency']}: measured "
        f"{s['speedup']:.2f}×, {verdict(s['speedup'] >= s['target'])}.",
        f"- Same records (status, turns, tool runs, tokens, answer, correct per task and epoch) "
        f"at every concurrency: {_yes(s['same_records'])}.",
        "",
    ]


def render_real(r: Figures) -> list[str]:
    servers = r["servers"]
    columns = [(s, row) for s in servers for row in s["rows"]]

    def line(label: str, value: Any) -> list[Any]:
        return [label, *(value(s, row) for s, row in columns)]

    first = servers[0]["rows"][0]["concurrency"]
    rows = [
        line("wall s", lambda s, row: f"{row['wall_s']:.1f}"),
        line(f"speedup over c{first}", lambda s, row: f"{row['speedup']:.2f}×"),
        line("mean turn ms", lambda s, row: _num(row["mean_turn_ms"])),
        line("turns", lambda s, row: row["turns"]),
        line("turns cut at max_tokens", lambda s, row: row.get("length_turns", "–")),
        line("tool runs", lambda s, row: row.get("tool_runs", "–")),
        line("correct", lambda s, row: f"{row['correct']}/{row['task_runs']}"),
        line(f"same records as c{first}", lambda s, row: _same(row, first)),
        line("load average before", lambda s, row: _num(row.get("load_before"), ".2f")),
    ]
    head = ["", *(f"{s['name']} c{row['concurrency']}" for s, row in columns)]
    software = "; ".join(
        f"{s['name']} ({s['slots']} slot{'s' if s['slots'] > 1 else ''}): "
        + ", ".join(s["server_software"])
        for s in servers
    )
    top = servers[0]["rows"][-1]["concurrency"]
    return [
        f"(b) The real model `{servers[0]['model']}`, the six tasks once (preset "
        f"`{servers[0]['preset']}`, at most {servers[0]['max_turns']} turns), at concurrency "
        f"{first} then {top}, each server in one process with `--threads 2`. Server software as "
        f"the records name it: {software}. A request without max_tokens gets "
        f"{r.get('default_max_tokens', '–')} tokens at most on both: llama-server is started "
        "with our server's default (`--n-predict`), without which it generates until the "
        "slot's context is full. llama-server does not read `repetition_penalty` (it reads "
        "`repeat_penalty`), so there the preset runs without its penalty. No target.",
        "",
        table(head, rows),
        "The project never re-implements batching: the eval only keeps requests in flight. A "
        "server that decodes one request at a time (ours) gains nothing from concurrency, its "
        "requests wait in its queue (mean turn time includes that wait); a server with slots "
        "(llama-server) decodes the requests in flight together. Batched decoding can change "
        "floating-point results, so records at several requests in flight may differ from one "
        "at a time; they are reported as measured.",
        "",
    ]


def render(f: Figures) -> list[str]:
    lines = [
        "## Eval throughput with concurrency",
        "",
        "The real eval runner (`evals.run.runner.run_eval`: the loop, tools on a fresh workspace, "
        "scoring, run files) with task runs in flight at once (`--concurrency`); wall seconds "
        "of each whole eval, measured one after another in one run. The machine's 1-minute "
        "load average before each eval says whether other work shared the cores.",
        "",
        *render_scripted(f["scripted"]),
    ]
    if "real" in f:
        lines += render_real(f["real"])
    return lines


PART = Part("scale", run, render)
