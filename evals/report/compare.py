"""Side-by-side comparison of run files: a Markdown table and two PNG plots."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals import registry
from evals.errors import RunFileError
from evals.markdown import table as markdown_table
from evals.record import RunRecord, is_error, read_runs, run_files
from evals.report.pairing import PairingError, paired
from evals.report.summary import cost_text, summarize
from evals.run.runner import RUNS
from evals.stats import Accuracy, accuracy
from harness.presets import plain_settings

NO_RUNS = "No run files yet: `make eval` adds one under results/runs/.\n"


@dataclass
class Run:
    label: str
    path: Path
    records: list[RunRecord]
    summary: dict[str, Any]

    @property
    def accuracy(self) -> Accuracy:
        return accuracy(self.records)


def load_runs(paths: Sequence[Path], skip_unreadable: bool = False) -> list[Run]:
    """The runs in ``paths``; a run file that cannot be read is an error naming it, or, with
    ``skip_unreadable`` (a report over many runs), left out with a warning naming it."""
    runs: list[Run] = []
    seen: dict[str, int] = {}
    for path in run_files(paths):
        try:
            records = read_runs(path)
        except RunFileError as exc:
            if not skip_unreadable:
                raise
            print(f"warning: {exc}; that run is left out", file=sys.stderr)
            continue
        if not records:
            continue
        summary = summarize(records)
        label = str(summary["label"] or path.stem)
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} ({path.stem[:15]})"
        runs.append(Run(label, path, records, summary))
    return runs


def _cell(records: list[RunRecord]) -> str:
    if not records:
        return "–"
    correct = sum(r.correct for r in records)
    mark = ("✓" if correct else "✗") if len(records) == 1 else f"{correct}/{len(records)}"
    turns = statistics.fmean(r.turns for r in records)
    latencies = [ms for r in records for ms in r.turn_latency_ms]
    ms = f"{statistics.fmean(latencies):,.0f}ms" if latencies else "–"
    return f"{mark} {turns:g}t {ms}"


def preset_name(preset: dict[str, Any] | None) -> str:
    """A run written before presets were recorded ran the plain loop."""
    return str(preset["name"]) if preset else "no-helpers (unrecorded)"


def solver_of(run: Run) -> str:
    """The agent loop under its preset, or the workflow's name."""
    record = run.records[0]
    if record.spec.solver != "agent":
        return record.spec.solver
    return f"agent ({preset_name(record.spec.preset.model_dump() if record.spec.preset else None)})"


def per_question(run: Run) -> tuple[float | None, float | None]:
    """Model calls and tokens per question, over the task runs that were not errors (None
    where every one was)."""
    done = [r for r in run.records if not is_error(r)]
    if not done:
        return None, None
    calls = statistics.fmean(r.turns for r in done)
    tokens = statistics.fmean(r.prompt_tokens + r.completion_tokens for r in done)
    return calls, tokens


def rank(run: Run) -> tuple[float, float, float]:
    """What "best" means everywhere a run is chosen: the most accurate, then the fewest model
    calls per question, then the fewest tokens (over the task runs that were not errors);
    never wall time, which moves with the machine's load."""
    calls, tokens = per_question(run)
    inf = float("inf")
    return (
        -accuracy(run.records).rate,
        inf if calls is None else calls,
        inf if tokens is None else tokens,
    )


def preset_settings(preset: dict[str, Any] | None) -> str:
    """The settings that differ from the plain loop's, so the cell stays readable."""
    if not preset:
        return "–"
    plain = plain_settings()
    changed = {k: v for k, v in preset["settings"].items() if plain.get(k) != v}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "(plain loop)"


def _curve(curve: dict[str, float] | None) -> str:
    """pass^1, pass^2, ... as a list; a summary written before the curve was kept has none."""
    return ", ".join(f"{v:.2f}" for v in curve.values()) if curve else "–"


def _fmt(value: Any, spec: str = ",.0f") -> str:
    return "–" if value is None else format(value, spec)


def table(runs: list[Run]) -> str:
    tasks: list[str] = []
    for run in runs:
        for r in run.records:
            if r.task_id not in tasks:
                tasks.append(r.task_id)
    labels = [r.label for r in runs]
    per_task = [
        [task, *(_cell([r for r in run.records if r.task_id == task]) for run in runs)]
        for task in tasks
    ]
    totals: list[list[str]] = [
        ["accuracy", *(str(r.accuracy) for r in runs)],
        [
            "pass^k (k = epochs)",
            *(f"{r.summary['pass_k']:.2f} (k={r.summary['epochs']})" for r in runs),
        ],
        ["pass^k for k = 1, 2, ...", *(_curve(r.summary.get("pass_hat_k")) for r in runs)],
        [
            "errors (not answers; rerun with --resume)",
            *(str(r.summary.get("errors") or 0) for r in runs),
        ],
        ["turns", *(str(r.summary["turns"]) for r in runs)],
        ["tool runs", *(str(r.summary["tool_runs"]) for r in runs)],
        [
            "calls with invalid arguments",
            *(_fmt(r.summary.get("invalid_calls"), "d") for r in runs),
        ],
        [
            "calls left as text",
            *(_fmt(r.summary.get("call_shaped_text"), "d") for r in runs),
        ],
        ["wall ms", *(_fmt(r.summary["wall_ms"]) for r in runs)],
        ["mean turn ms", *(_fmt(r.summary["mean_turn_ms"]) for r in runs)],
        ["p95 turn ms", *(_fmt(r.summary["p95_turn_ms"]) for r in runs)],
        ["prompt tokens", *(_fmt(r.summary["prompt_tokens"], ",") for r in runs)],
        ["completion tokens", *(_fmt(r.summary["completion_tokens"], ",") for r in runs)],
        ["cost at list price", *(cost_text(r.summary) for r in runs)],
        ["backend", *(str(r.summary["backend"]) for r in runs)],
        ["tool grammar", *(str(r.summary.get("tool_grammar") or "–") for r in runs)],
        ["model sha256", *(f"`{str(r.summary['model_sha256'])[:12]}`" for r in runs)],
        ["preset", *(preset_name(r.summary.get("preset")) for r in runs)],
        ["preset settings", *(preset_settings(r.summary.get("preset")) for r in runs)],
        [
            "loop",
            *(", ".join(f"{k}={v}" for k, v in (r.summary["loop"] or {}).items()) for r in runs),
        ],
        ["run file", *(f"`{r.path.name}`" for r in runs)],
    ]
    return (
        "Per task: correct, turns, mean turn latency.\n\n"
        + markdown_table(["task", *labels], per_task)
        + "\nTotals.\n\n"
        + markdown_table(["total", *labels], totals)
    )


def plot(runs: list[Run], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    tasks = list(dict.fromkeys(r.task_id for run in runs for r in run.records))
    width = 0.8 / max(len(runs), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(tasks)), 4))
    for i, run in enumerate(runs):
        walls = [
            statistics.fmean([r.wall_ms / 1000 for r in run.records if r.task_id == t] or [0])
            for t in tasks
        ]
        ax.bar([x + i * width for x in range(len(tasks))], walls, width, label=run.label)
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(tasks))], tasks)
    ax.set_ylabel("wall time per task (s)")
    ax.set_title("Wall time per task")
    _legend(ax, len(runs))
    wall_png = folder / "task_wall.png"
    fig.savefig(wall_png, dpi=110, bbox_inches="tight")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs:
        by_index: dict[int, list[float]] = {}
        for r in run.records:
            for i, ms in enumerate(r.turn_latency_ms, start=1):
                by_index.setdefault(i, []).append(ms)
        xs = sorted(by_index)
        ax.plot(xs, [statistics.median(by_index[x]) for x in xs], marker="o", label=run.label)
    ax.set_xlabel("turn index within a task")
    ax.set_ylabel("median latency per turn (ms)")
    ax.set_title("Latency per turn")
    _legend(ax, len(runs))
    turn_png = folder / "turn_latency.png"
    fig.savefig(turn_png, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [wall_png, turn_png]


# Legend entries per column beside the plot; more runs take more columns.
LEGEND_ROWS = 24


def _legend(ax: Any, runs: int) -> None:
    """The legend beside the axes, not over them: with many runs it is taller than the plot,
    and the saved figure grows to hold it (``bbox_inches="tight"``) instead of warning."""
    ax.legend(
        fontsize="x-small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        ncol=max(1, -(-runs // LEGEND_ROWS)),
    )


def compare(paths: Sequence[Path], out: Path | None = None, plots: Path | None = None) -> str:
    runs = load_runs(paths)
    text = "# Comparison\n\n" + (table(runs) if runs else NO_RUNS)
    if plots is not None and runs:
        images = plot(runs, plots)
        if out is not None:
            links = [
                p.relative_to(out.parent) if p.is_relative_to(out.parent) else p for p in images
            ]
            text += "\n" + "".join(f"![{link.stem}]({link})\n" for link in links)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return text


ROOT = Path(__file__).resolve().parents[2]


def reply_code() -> tuple[str, ...]:
    """The code that makes a reply: a change under these between two runs' commits can change
    what the model was asked (the environments lay out its prompt and tools, the solvers its
    turns) or how its reply was read, so such a pair is not like for like. The server, the
    loop, the environments' protocol and the solvers, and each installed environment's package
    that lies in this checkout (the whole package: its task sources and figures count too, so
    the count errs towards saying a pair differs)."""
    packages = set()
    for environment in registry.ENVIRONMENTS:
        folder = Path(*type(environment).__module__.split(".")[:-1])
        if folder.parts and (ROOT / folder).is_dir():
            packages.add(folder.as_posix())
    return ("serve_local", "harness", "evals/environments", *sorted(packages), "evals/solvers")


def code_versions(run: Run) -> list[str]:
    """The commits a run's records were made at (several when it was resumed across them)."""
    return sorted({r.spec.code_version or "unknown" for r in run.records})


def day(run: Run) -> str:
    days = sorted({r.timestamp[:10] for r in run.records if r.timestamp})
    return " to ".join(dict.fromkeys([days[0], days[-1]])) if days else "?"


def reply_code_changed(a: list[str], b: list[str]) -> int | None:
    """How many files under :func:`reply_code` differ between the two runs' commits (the
    most over every pair of them); None when git cannot tell (a commit unknown here)."""
    if a == b and len(a) == 1:
        return 0
    most = 0
    for x in a:
        for y in b:
            if x == y:
                continue
            found = subprocess.run(
                ["git", "diff", "--name-only", x.removesuffix("+dirty"),
                 y.removesuffix("+dirty"), "--", *reply_code()],
                cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            if found.returncode != 0:
                return None
            most = max(most, len(found.stdout.split()))
    return most


def _shown(path: Path) -> str:
    """A run file as a page names it: from the working folder's results folder down when it
    lies there (two runs of one name in two folders stay apart), else by its name."""
    resolved = path.resolve()
    results = RUNS.parent.resolve()
    return str(resolved.relative_to(results)) if resolved.is_relative_to(results) else path.name


def like_for_like(a: Run, b: Run) -> str | None:
    """A warning when the two runs were made at code versions that differ where a reply is
    made, or at versions git here does not know; None when they are like for like."""
    va, vb = code_versions(a), code_versions(b)
    changed = reply_code_changed(va, vb)
    if changed == 0 and len(va) == 1 and len(vb) == 1:
        return None
    sides = f"{a.label} at {', '.join(va)}, {b.label} at {', '.join(vb)}"
    if changed is None:
        return (
            f"Not known to be like for like: the runs' code versions ({sides}) are not all in "
            "this repository's history."
        )
    if changed == 0:
        return None
    return (
        f"Not like for like: the runs were made at different code versions ({sides}); "
        f"{changed} files under {', '.join(reply_code())} differ between them, so a "
        "difference may be the code's as much as the setting's."
    )


def paired_table(path_a: Path, path_b: Path, across_surfaces: bool = False) -> str:
    """Run B against run A, task by task: the verdict of the exact test, the difference with
    its interval, the smallest difference the tasks could detect, and the tasks each did
    better on. Different task sets are refused (:class:`PairingError`), but for their tool
    surfaces with ``across_surfaces``."""
    for path in (path_a, path_b):
        if not path.is_file():
            raise PairingError(f"{path}: not a run file with records")
    runs = load_runs([path_a, path_b])  # a file without records is left out
    if len(runs) < 2:
        empty = path_a if path_a not in {r.path for r in runs} else path_b
        raise PairingError(f"{empty}: not a run file with records")
    a, b = runs
    result = paired(a.records, b.records, a.label, b.label, across_surfaces)
    rows = [
        [run.label, f"`{_shown(run.path)}`", ", ".join(code_versions(run)), day(run),
         str(run.accuracy), ", ".join(better) or "–"]
        for run, better in ((a, result.only_a), (b, result.only_b))
    ]  # fmt: skip
    warning = like_for_like(a, b)
    epochs = max(a.summary["epochs"], b.summary["epochs"])
    unit = (
        "each task counted once, as its share of right epochs"
        if epochs > 1
        else "one run of each task"
    )
    return (
        f"# Paired comparison\n\n{result.sentence()}.\n\n"
        + (f"**{warning}**\n\n" if warning else "")
        + f"{result.tasks} tasks in both ({unit}); {len(result.only_a)} better in {a.label}, "
        f"{len(result.only_b)} better in {b.label}. The verdict is an exact two-sided sign test "
        "on the tasks where the runs differ (McNemar's exact test when each task is right or "
        "wrong); the interval is a paired bootstrap over tasks and never overrides it. The "
        "smallest detectable difference is at 80 % power and 5 % significance, for rates near "
        "50 %, treating the runs as independent samples of the tasks.\n\n"
        + markdown_table(
            ["run", "run file", "code", "day", "correct", "better here than in the other"], rows
        )
    )
