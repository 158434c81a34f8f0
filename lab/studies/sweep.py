"""The task set under each preset, for each model: ``python -m lab sweep``.

How models reach servers: with ``--base-url`` every model is asked of that server, as it is
(a running ``make serve-local``, or the scripted provider). Without it, the sweep serves each
model itself: ``serve_local.process`` starts one server per model on a free port (backend,
threads and tool grammar as given), every preset runs against it, and it is stopped before the
next model starts, so two models never share the cores.

Each (model, preset) is one ordinary eval: its run file, state files and traces land under
``results/runs/`` like ``make eval``'s. The sweep writes ``sweep.md``, ``sweep.json`` and
``plots/sweep.png`` from their summaries; the best preset per model is the most accurate, then
the one with the fewest turns, then the fewest tokens (never the fastest: wall time moves with
the machine's load).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.markdown import table
from evals.record import read_runs
from evals.report.summary import summarize, summarize_run_file
from evals.run.runner import EvalSettings, default_out, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.run.started import Started, served
from evals.stats import accuracy_of, detectable_difference
from evals.tasks import DEFAULT_TASKS
from harness.config import LoopConfig
from harness.presets import preset
from lab.report.docs import fill


@dataclass
class SweepSettings:
    presets: list[str]
    models: list[str | None]  # None: whatever the server at base_url serves first
    base_url: str | None = None  # None: serve each model here, one at a time
    api_key_env: str | None = None  # where base_url's key is read from (its variable's name)
    epochs: int = 1
    tasks: Path = DEFAULT_TASKS
    loop: LoopConfig = field(default_factory=eval_loop)  # its limits, sampling, tool errors
    out: Path = Path("results")
    started: Started = field(default_factory=Started)  # how the servers it starts are run


def best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The most accurate, then the fewest turns, then the fewest tokens: figures a rerun on the
    same machine repeats. Wall time moves with the machine's load and is never the tie-breaker;
    a tie left after the tokens goes to the earlier row (the order the presets were named)."""
    return min(
        rows,
        key=lambda r: (-r["accuracy"], r["turns"], r["prompt_tokens"] + r["completion_tokens"]),
    )


async def _sweep_model(
    model: str | None, base_url: str, settings: SweepSettings, echo: Callable[[str], None]
) -> list[dict[str, Any]]:
    rows = []
    for name in settings.presets:
        label = f"sweep {model or 'default'} {name}"
        eval_settings = EvalSettings(
            serving=Serving(base_url=base_url, model=model, api_key_env=settings.api_key_env),
            tasks=settings.tasks,
            epochs=settings.epochs,
            loop=settings.loop,
            label=label,
            preset=preset(name),
            out=default_out(label, settings.out / "runs"),
        )
        rows.append(row(await run_eval(eval_settings, echo=echo, summarize=summarize_run_file)))
    return rows


def row(run_file: Path) -> dict[str, Any]:
    """One line of the sweep: a run file's summary, named by its model and preset (under the
    keys ``preset`` and ``preset_settings``, as sweep.json and the summaries keep them)."""
    summary = summarize(read_runs(run_file))
    preset = summary.pop("preset") or {"name": "no-helpers (unrecorded)", "settings": {}}
    accuracy = accuracy_of(summary)
    return {
        **summary,
        "accuracy_ci95": [round(accuracy.low, 4), round(accuracy.high, 4)],
        "preset": preset["name"],
        "preset_settings": preset["settings"],
        "run_file": str(run_file),
    }


async def run_sweep(settings: SweepSettings, echo: Callable[[str], None] = print) -> list[Path]:
    for name in settings.presets:
        preset(name)  # an unknown name fails before any server starts
    rows: list[dict[str, Any]] = []
    for model in settings.models:
        if settings.base_url is not None:
            rows += await _sweep_model(model, settings.base_url, settings, echo)
            continue
        if model is None:
            raise EvalError("without --base-url, name the models to serve with --models")
        with served(model, settings.started, echo) as url:
            rows += await _sweep_model(model, url, settings, echo)
    return write(rows, settings.out)


def rewrite(run_files: list[Path], out: Path) -> list[Path]:
    """The sweep's report from run files already written (by an earlier sweep or evals run)."""
    return write([row(path) for path in run_files], out)


def _fmt(value: Any, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def sweep_table(rows: list[dict[str, Any]], winners: dict[str, str]) -> str:
    """Every run of the sweep in a row, each model's best preset in bold: what sweep.md and
    docs/policies.md show."""
    head = [
        "model",
        "preset",
        "accuracy",
        "pass^k",
        "turns",
        "tool runs",
        "tokens in/out",
        "cost",
        "wall s",
        "mean turn ms",
        "p95 turn ms",
        "invalid calls",
        "calls left as text",
    ]
    body = [
        [
            r["model"],
            f"**{r['preset']}**" if winners.get(r["model"]) == r["preset"] else r["preset"],
            str(accuracy_of(r)),
            f"{r['pass_k']:.2f} (k={r['epochs']})",
            r["turns"],
            r["tool_runs"],
            f"{r['prompt_tokens']:,}/{r['completion_tokens']:,}",
            "unknown" if r["cost_usd"] is None else f"${r['cost_usd']:.4f}",
            f"{r['wall_ms'] / 1000:.1f}",
            _fmt(r["mean_turn_ms"], ",.0f"),
            _fmt(r["p95_turn_ms"], ",.0f"),
            _fmt(r["invalid_calls"], "d"),
            _fmt(r["call_shaped_text"], "d"),
        ]
        for r in rows
    ]
    return table(head, body)


def markdown(rows: list[dict[str, Any]], winners: dict[str, str]) -> str:
    machine = rows[0].get("machine") or {} if rows else {}
    lines = [
        "# Preset sweep",
        "",
        "The task set under each preset (presets in `harness/presets.json`); "
        "the best preset per model, in bold, is the most accurate, then the one with the "
        "fewest turns, then the fewest tokens; wall time is shown, never used to choose. "
        "Accuracy carries its 95 % Wilson interval: where two rows' intervals overlap, the "
        "bold one may be luck (`python -m evals compare --paired A B` tests two rows on the "
        "same tasks). Cost is at the "
        "harness's list price. Each row's run file is in `sweep.json`.",
        "",
        f"Machine: {machine.get('cores')} cores, {machine.get('cpu')}.",
        "",
        sweep_table(rows, winners),
    ]
    lines += [f"Best for {m}: `{p}`." for m, p in winners.items()]
    sizes = sorted({int(r["tasks"]) for r in rows})
    for n in sizes:
        mdd = detectable_difference(n)
        lines += [
            "",
            f"On {n} tasks, two rows can be told apart (80 % power, 5 % two-sided) only when "
            f"their accuracies differ by about {mdd:.0f} points or more; a smaller difference "
            "here may be luck (`python -m evals power` for other sizes)."
            if mdd is not None
            else f"On {n} task(s), no difference between two rows can be detected.",
        ]
    front = ", ".join(f"{r['model']} {r['preset']}" for r in pareto_front(rows))
    lines += [
        "",
        f"Pareto front (accuracy against mean turn latency; latency is shown, never used to "
        f"choose): {front or 'none'}.",
        "",
        "![sweep](plots/sweep.png)",
        "",
        "![accuracy against latency](plots/sweep_pareto.png)",
        "",
    ]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    shown = list(dict.fromkeys(r["preset"] for r in rows))
    width = 0.8 / max(len(models), 1)
    fig, (acc, wall) = plt.subplots(1, 2, figsize=(max(8, 1.5 * len(shown)), 4))
    for i, model in enumerate(models):
        mine = {r["preset"]: r for r in rows if r["model"] == model}
        xs = [x + i * width for x in range(len(shown))]
        acc.bar(xs, [mine[p]["accuracy"] if p in mine else 0 for p in shown], width)
        wall.bar(
            xs,
            [mine[p]["wall_ms"] / 1000 if p in mine else 0 for p in shown],
            width,
            label=model,
        )
    for ax, title in ((acc, "accuracy"), (wall, "wall time for the task set (s)")):
        ax.set_xticks([x + width * (len(models) - 1) / 2 for x in range(len(shown))], shown)
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_title(title)
    wall.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def pareto_front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows no other row beats on both accuracy and mean turn latency, fastest first."""
    timed = [r for r in rows if r.get("mean_turn_ms") is not None]

    def beaten(r: dict[str, Any]) -> bool:
        return any(
            o["accuracy"] >= r["accuracy"]
            and o["mean_turn_ms"] <= r["mean_turn_ms"]
            and (o["accuracy"], o["mean_turn_ms"]) != (r["accuracy"], r["mean_turn_ms"])
            for o in timed
        )

    return sorted((r for r in timed if not beaten(r)), key=lambda r: r["mean_turn_ms"])


def pareto_plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Accuracy against mean turn latency, one point per (model, preset), the front joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    markers = "osD^v<>P*X"
    for i, model in enumerate(dict.fromkeys(r["model"] for r in rows)):
        mine = [r for r in rows if r["model"] == model and r.get("mean_turn_ms") is not None]
        ax.scatter(
            [r["mean_turn_ms"] for r in mine],
            [r["accuracy"] for r in mine],
            marker=markers[i % len(markers)],
            label=model,
            alpha=0.8,
        )
        for r in mine:
            ax.annotate(r["preset"], (r["mean_turn_ms"], r["accuracy"]), fontsize=6, alpha=0.7)
    front = pareto_front(rows)
    if front:
        ax.plot(
            [r["mean_turn_ms"] for r in front],
            [r["accuracy"] for r in front],
            "k--",
            linewidth=1,
            label="Pareto front",
        )
    ax.set_xscale("log")
    ax.set_xlabel("mean turn latency (ms, log scale; moves with the machine's load)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("accuracy against latency per turn, one point per model and preset")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


COMMITTED = Path(__file__).resolve().parents[2] / "results"
POLICIES = COMMITTED.parent / "docs" / "policies.md"


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    winners = {
        model: best([r for r in rows if r["model"] == model])["preset"]
        for model in dict.fromkeys(r["model"] for r in rows)
    }
    out.mkdir(parents=True, exist_ok=True)
    data = {"best": winners, "runs": rows}
    json_path, md_path = out / "sweep.json", out / "sweep.md"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    md_path.write_text(markdown(rows, winners))
    if out.resolve() == COMMITTED:  # the sweep docs/policies.md quotes
        fill(POLICIES, "sweep-table", sweep_table(rows, winners))
    plots = [plot(rows, out / "plots" / "sweep.png")]
    plots.append(pareto_plot(rows, out / "plots" / "sweep_pareto.png"))
    return [md_path, json_path, *plots]
