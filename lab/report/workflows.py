"""Workflow or agent? Each task set's runs side by side, by model and solver (the agent loop
under its preset, or a workflow), and for each model the best workflow against the best agent
run, paired task by task. "Best" is the most accurate, then the fewest model calls, then the
fewest tokens: figures that do not move with the machine's load (wall time is shown, never
ranked by)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from evals.markdown import table
from evals.record import RunRecord, committed, is_error
from evals.registry import held_by
from evals.report.compare import Run, load_runs, rank, solver_of
from evals.report.pairing import PairingError, paired
from evals.stats import accuracy
from evals.tasks import DEFAULT_TASKS, chance_of, load_tasks


def _done(run: Run) -> list[RunRecord]:
    return [r for r in run.records if not is_error(r)]


def _flow(run: Run) -> bool:
    return run.records[0].spec.solver != "agent"


def best(runs: Sequence[Run]) -> Run | None:
    return min(runs, key=rank) if runs else None


def _per_question(run: Run) -> list[str]:
    """Model calls and tokens per question, over the task runs that were not errors."""
    done = _done(run) or run.records
    return [
        f"{statistics.fmean(r.turns for r in done):.1f}",
        f"{statistics.fmean(r.prompt_tokens + r.completion_tokens for r in done):,.0f}",
    ]


def _row(run: Run, marked: bool) -> list[str]:
    done = _done(run) or run.records
    latencies = [ms for r in done for ms in r.turn_latency_ms]
    name = f"**{solver_of(run)}**" if marked else solver_of(run)
    return [
        f"`{run.records[0].spec.model}`",
        name,
        str(accuracy(run.records)),
        *_per_question(run),
        f"{statistics.median(r.wall_ms for r in done) / 1000:,.1f}",
        f"{statistics.median(latencies):,.0f}" if latencies else "–",
        str(sum(is_error(r) for r in run.records)),
    ]


HEAD = [
    "model", "solver", "accuracy", "model calls / question", "tokens / question",
    "median wall s / question", "median ms / model call", "errors",
]  # fmt: skip


def _floor(task_set: str) -> list[str]:
    """What a question-blind guess scores on the set, where its task file is committed: under
    a workflow the code gathers the evidence, so only the answer check decides."""
    path = DEFAULT_TASKS.parent / f"{task_set}.json"
    if not path.exists():
        return []
    tasks = load_tasks(path).tasks
    chance = statistics.fmean(chance_of(t) for t in tasks)
    guess = f"Floor: a guess among each question's candidates scores {100 * chance:.0f} % here."
    # What the tasks' environments say of a guess under a workflow (the first that says).
    said = [n for e, _ in held_by(tasks) if (n := getattr(e, "under_workflows", None))]
    return [" ".join([guess, *said[:1]])]


# The run files the report reads by default (``make workflows-report``): the workflows, the
# sweep's agent runs, the generated-set runs and the SQL runs.
ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ROOT / "docs" / "findings.md"
LADDER_SETS = (
    ("files6", "files6 (6 tasks)"),
    ("gen-test-s1000-n60", "generated test set (60 tasks)"),
    ("sql-test-s1000-n60", "SQL analyst (60 questions)"),
)
LADDER_MODELS = (
    ("qwen2.5-coder-1.5b-instruct", "Qwen2.5-Coder-1.5B (default)"),
    ("qwen2.5-coder-0.5b-instruct", "Qwen2.5-Coder-0.5B"),
    ("smollm2-135m-instruct", "SmolLM2-135M"),
)


def default_sources(root: Path = ROOT) -> list[Path]:
    import json

    sweep = root / "results" / "sweep.json"
    swept = [root / r["run_file"] for r in json.loads(sweep.read_text())["runs"]]
    return [
        *committed(root / "results" / "workflows"),
        *[p for p in swept if p.exists()],
        *committed(root / "results" / "runs", "*-gen-test-*.jsonl"),
        *committed(root / "results" / "sql"),
        *committed(root / "results" / "sql" / "runs"),
    ]


def _count(run: Run) -> str:
    done = _done(run)
    return f"{sum(r.correct for r in done)}/{len(done)}"


def _cell(runs: Sequence[Run], task_set: str, model: str) -> str:
    mine = [
        r
        for r in runs
        if str(r.records[0].spec.task_set) == task_set and r.records[0].spec.model == model
    ]
    agent, flow = best([r for r in mine if not _flow(r)]), best([r for r in mine if _flow(r)])
    if agent is None or flow is None:
        return "–"
    head = f"{solver_of(agent)} {_count(agent)} vs {solver_of(flow)} {_count(flow)}"
    try:
        v = paired(agent.records, flow.records, solver_of(agent), solver_of(flow))
    except PairingError:
        return f"{head}: not paired"
    if v.detected:
        better = solver_of(flow) if v.difference > 0 else solver_of(agent)
        return f"{head}: **{better} better by {abs(v.difference):.0f} points**, p = {v.p_value:.2g}"
    detect = f"; {v.tasks} tasks detect {v.detectable:.0f}" if v.detectable else ""
    return f"{head}: no difference detected ({v.difference:+.0f}, p = {v.p_value:.2g}{detect})"


def ladder_table(paths: Sequence[Path]) -> str:
    """The README's table: per model and task set, the best agent run against the best
    workflow, paired task by task (written by ``make workflows-report``)."""
    runs = load_runs(paths)
    head = ["model", *(label for _, label in LADDER_SETS)]
    rows = [
        [label, *(_cell(runs, task_set, model) for task_set, _ in LADDER_SETS)]
        for model, label in LADDER_MODELS
    ]
    return table(head, rows)


DOCS = ROOT / "docs" / "workflows.md"
DEFAULT_MODEL = LADDER_MODELS[0][0]


def default_model_table(paths: Sequence[Path]) -> str:
    """docs/workflows.md's results: the default model on each ladder set, every workflow and
    its best agent run, then each set's best workflow against that run, paired."""
    runs = [r for r in load_runs(paths) if r.records[0].spec.model == DEFAULT_MODEL]
    rows, verdicts = [], []
    for task_set, _ in LADDER_SETS:
        mine = [r for r in runs if str(r.records[0].spec.task_set) == task_set]
        agent = best([r for r in mine if not _flow(r)])
        flows = sorted((r for r in mine if _flow(r)), key=rank)
        shown = ([agent] if agent is not None else []) + flows
        for n, run in enumerate(shown):
            marked = run is agent or run is (flows[0] if flows else None)
            name = solver_of(run)
            rows.append(
                [
                    task_set if n == 0 else "",
                    f"**{name}**" if marked else name,
                    str(accuracy(run.records)),
                    *_per_question(run),
                ]
            )
        if agent is not None and flows:
            try:
                v = paired(agent.records, flows[0].records, solver_of(agent), solver_of(flows[0]))
                verdicts.append(f"- {task_set}, {solver_of(flows[0])} against the best agent run "
                                f"({solver_of(agent)}): {v.sentence()}.")  # fmt: skip
            except PairingError as exc:
                verdicts.append(f"- {task_set}: not paired ({exc}).")
    head = ["task set", "solver", "accuracy", "model calls / question", "tokens / question"]
    return table(head, rows) + "\n" + "\n".join(verdicts) + "\n"


def report(paths: Sequence[Path]) -> str:
    runs = load_runs(paths)
    if not runs:
        return "No run files.\n"
    lines = [
        "# Workflow or agent?",
        "",
        "Each task set's runs by model and solver: the agent loop under a preset, or a workflow "
        "whose steps the code fixes (`--solver chain|route|vote|evaluate-optimize`). In bold, "
        "per model, the best workflow and the best agent run: the most accurate, then the "
        "fewest model calls, then the fewest tokens. Rebuilt from the run files by "
        "`make workflows-report`.",
        "",
    ]
    for task_set in sorted({str(r.records[0].spec.task_set) for r in runs}):
        mine = [r for r in runs if str(r.records[0].spec.task_set) == task_set]
        # Only the models some workflow ran on this set; of their agent runs, the best.
        models = list(dict.fromkeys(r.records[0].spec.model for r in mine if _flow(r)))
        if not models:
            continue
        rows, pairs, others = [], [], 0
        for model in models:
            of_model = [r for r in mine if r.records[0].spec.model == model]
            agents = [r for r in of_model if not _flow(r)]
            flows = sorted((r for r in of_model if _flow(r)), key=rank)
            agent, flow = best(agents), best(flows)
            others += max(len(agents) - 1, 0)
            rows += [_row(r, r is flow) for r in flows]
            if agent is not None:
                rows.append(_row(agent, True))
                pairs.append((model, agent, flows[0]))
        lines += [f"## {task_set}", "", table(HEAD, rows), *_floor(task_set), ""]
        if others:
            lines += [f"Agent runs: the best of each model's; {others} others left out.", ""]
        for model, agent, flow in pairs:
            try:
                verdict = paired(agent.records, flow.records, solver_of(agent), solver_of(flow))
            except PairingError as exc:
                lines += [f"- `{model}`: not paired ({exc}).", ""]
                continue
            lines += [f"- `{model}`, {solver_of(flow)} against {solver_of(agent)}: "
                      f"{verdict.sentence()}.", ""]  # fmt: skip
    return "\n".join(lines)
