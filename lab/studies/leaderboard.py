"""The ladder on a task set sized to tell its rungs apart: each model under the policies named
for it, every pair that matters tested task by task.

``python -m lab leaderboard --entrants MODEL:PRESET,... --tasks FILE --out DIR`` serves each
model in turn (one model process at a time, as the sweep does), runs what is missing and
writes ``DIR/leaderboard.md`` and ``.json``. Each entrant's run file has a fixed name
(``DIR/MODEL-PRESET.jsonl``), so the command is its own resume: a finished run is kept, an
interrupted one (its ``.partial``) goes on with the tasks left, and the report is rebuilt from
whatever is finished. ``--report-only`` runs nothing.

The report: every run with its accuracy (each task once, its interval clustered by task),
pass^k where epochs were sampled, model calls and tokens per question, errors apart; each
model's best in bold (most accurate, then fewest calls, then fewest tokens; never wall time);
then the paired tests that say whether the rungs differ: within a model, its environment's
default preset against its best, and down the ladder, each model's best against the next
model's best. Each verdict is the exact test's, with the smallest difference the set could
detect beside every "no difference detected".
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.markdown import model_label, table
from evals.record import is_error, read_runs, slug
from evals.registry import environment_of_record
from evals.report.compare import Run, load_runs, per_question, rank
from evals.report.pairing import Paired, paired
from evals.report.summary import summarize_run_file
from evals.run.runner import run_eval
from evals.run.servers import Serving
from evals.run.settings import EvalSettings, eval_loop, resumed_settings
from evals.run.started import Started, served
from evals.stats import detectable_difference, pass_hat_k
from evals.workspace.environment import WorkspaceEnvironment
from harness.config import LoopConfig
from harness.presets import preset
from lab.report.docs import fill


@dataclass(frozen=True)
class Entrant:
    model: str
    preset: str

    @property
    def name(self) -> str:
        return f"{self.model} {self.preset}"


def parse_entrants(text: str) -> list[Entrant]:
    """``MODEL:PRESET,MODEL:PRESET``; a model name may hold colons (``scripted:oracle``), a
    preset's name does not. Unknown presets are refused before anything runs."""
    entrants = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        model, sep, name = part.rpartition(":")
        if not sep or not model or not name:
            raise EvalError(f"--entrants: {part!r} is not MODEL:PRESET")
        preset(name)  # an unknown name fails here
        entrants.append(Entrant(model, name))
    if not entrants:
        raise EvalError("--entrants: name at least one MODEL:PRESET")
    if len(set(entrants)) < len(entrants):
        raise EvalError("--entrants: an entrant is named twice")
    return entrants


def run_file(out: Path, entrant: Entrant) -> Path:
    return out / f"{slug(entrant.model)}-{slug(entrant.preset)}.jsonl"


def _partial(out: Path, entrant: Entrant) -> Path:
    """Where an entrant's interrupted run waits for the next ``make leaderboard``."""
    found = run_file(out, entrant)
    return found.with_name(found.name + ".partial")


def _tasks_done(partial: Path) -> int:
    """Task runs an interrupted run has finished (its records); errors are run again."""
    return sum(not is_error(r) for r in read_runs(partial))


@dataclass
class LeaderboardSettings:
    entrants: list[Entrant]
    tasks: Path
    out: Path
    base_url: str | None = None  # None: serve each model here, one at a time
    api_key_env: str | None = None  # where base_url's key is read from (its variable's name)
    loop: LoopConfig = field(default_factory=lambda: eval_loop(max_turns=8))
    epochs: int = 1
    started: Started = field(default_factory=Started)  # how the servers it starts are run


async def run_leaderboard(
    settings: LeaderboardSettings, echo: Callable[[str], None] = print
) -> list[Path]:
    """Run every entrant that has no finished run file (resuming a partial one), then write
    the report. Models are served one at a time, each once."""
    settings.out.mkdir(parents=True, exist_ok=True)
    models = list(dict.fromkeys(e.model for e in settings.entrants))
    for model in models:
        todo = [
            e
            for e in settings.entrants
            if e.model == model and not run_file(settings.out, e).exists()
        ]
        if not todo:
            echo(f"{model}: every run is finished")
            continue
        if settings.base_url is not None:
            await _run_entrants(todo, settings.base_url, settings, echo)
            continue
        with served(model, settings.started, echo) as url:
            await _run_entrants(todo, url, settings, echo)
    return write(settings.entrants, settings.out)


async def _run_entrants(
    todo: list[Entrant], url: str, settings: LeaderboardSettings, echo: Callable[[str], None]
) -> None:
    for entrant in todo:
        out = run_file(settings.out, entrant)
        partial = _partial(settings.out, entrant)
        if partial.exists():
            echo(f"{entrant.name}: resuming {partial}")
            eval_settings = resumed_settings(partial, base_url=url)
            serving = replace(eval_settings.serving, api_key_env=settings.api_key_env)
            eval_settings = replace(eval_settings, serving=serving)
        else:
            eval_settings = EvalSettings(
                serving=Serving(
                    base_url=url, model=entrant.model, api_key_env=settings.api_key_env
                ),
                tasks=settings.tasks,
                epochs=settings.epochs,
                loop=settings.loop,
                label=f"leaderboard {entrant.name}",
                preset=preset(entrant.preset),
                out=out,
            )
        await run_eval(eval_settings, echo=echo, summarize=summarize_run_file)


def _row(run: Run, best: bool) -> dict[str, Any]:
    acc = run.accuracy
    calls, tokens = per_question(run)
    epochs = int(run.summary["epochs"])
    record = run.records[0]
    return {
        "model": record.spec.model,
        "preset": record.spec.preset.name if record.spec.preset else None,
        "best": best,
        "tasks": acc.n,
        "correct": acc.k,
        "accuracy": acc.rate,
        "ci95": [acc.low, acc.high],
        "pass_k": pass_hat_k(run.records, epochs) if epochs > 1 else None,
        "epochs": epochs,
        "calls": calls,
        "tokens": tokens,
        "errors": sum(is_error(r) for r in run.records),
        "task_set": record.spec.task_set,
        "run_file": str(run.path),
    }


def best_of(runs: dict[Entrant, Run], entrants: list[Entrant]) -> dict[str, Entrant]:
    """Each model's best entrant among those with a finished run (ties to the one named
    first)."""
    found: dict[str, Entrant] = {}
    for model in dict.fromkeys(e.model for e in entrants if e in runs):
        mine = [e for e in entrants if e.model == model and e in runs]
        found[model] = min(mine, key=lambda e: rank(runs[e]))  # min keeps the first of a tie
    return found


def comparisons(
    runs: dict[Entrant, Run], entrants: list[Entrant]
) -> list[tuple[str, Entrant, Entrant, Paired]]:
    """Within each model its environment's default preset against its best; down the ladder
    (the order the models were named), each model's best against the next one's."""
    best = best_of(runs, entrants)
    found = []
    for model, top in best.items():
        default = environment_of_record(runs[top].records[0]).default_preset
        fallback = Entrant(model, default)
        if fallback in runs and fallback != top:
            found.append(("default against best", fallback, top, _paired(runs, fallback, top)))
    models = list(best)
    for upper, lower in itertools.pairwise(models):
        found.append(("rung", best[lower], best[upper], _paired(runs, best[lower], best[upper])))
    return found


def _paired(runs: dict[Entrant, Run], a: Entrant, b: Entrant) -> Paired:
    return paired(runs[a].records, runs[b].records, a.name, b.name)


def write(entrants: list[Entrant], out: Path) -> list[Path]:
    """leaderboard.md and .json from the finished run files of ``entrants`` under ``out``."""
    present = {e: run_file(out, e) for e in entrants if run_file(out, e).exists()}
    loaded = dict(zip(present, load_runs(list(present.values())), strict=True))
    if not loaded:
        raise EvalError(f"no finished leaderboard run under {out}: run it first")
    sets = {str(run.records[0].spec.task_set) for run in loaded.values()}
    if len(sets) > 1:
        raise EvalError(f"the runs under {out} are over different task sets: {sorted(sets)}")
    best = set(best_of(loaded, entrants).values())
    tests = comparisons(loaded, entrants)
    data = {
        "task_set": sets.pop(),
        "rows": [_row(run, e in best) for e, run in loaded.items()],
        "comparisons": [
            {
                "kind": kind,
                "a": a.name,
                "b": b.name,
                "verdict": p.sentence(),
                "detected": p.detected,
                "p_value": p.p_value,
                "difference": p.difference,
                "detectable": p.detectable,
            }
            for kind, a, b, p in tests
        ],
        "kinds": {e.name: kinds_of(run) for e, run in loaded.items()},
        "missing": [e.name for e in entrants if e not in loaded],
        "in_progress": {
            e.name: _tasks_done(_partial(out, e))
            for e in entrants
            if e not in loaded and _partial(out, e).exists()
        },
    }
    json_path, md_path = out / "leaderboard.json", out / "leaderboard.md"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    md_path.write_text(markdown(data))
    if out.resolve() == COMMITTED:  # the board the README and docs/findings.md quote
        for page in (README, FINDINGS):
            fill(page, "leaderboard", readme_table(data))
        fill(FINDINGS, "leaderboard-verdicts", readme_verdicts(data))
        fill(FINDINGS, "leaderboard-kinds", kinds_table(data))
    return [md_path, json_path]


def kinds_of(run: Run) -> dict[str, list[int]]:
    """Per kind of question: [correct, task runs judged] (errors are in neither)."""
    found: dict[str, list[int]] = {}
    for record in run.records:
        if is_error(record):
            continue
        tally = found.setdefault(str(record.kind), [0, 0])
        tally[0] += bool(record.correct)
        tally[1] += 1
    return dict(sorted(found.items()))


def kinds_table(data: dict[str, Any]) -> str:
    """Correct answers per kind of question, one column per entrant."""
    names = list(data.get("kinds", {}))
    kinds = sorted({k for name in names for k in data["kinds"][name]})
    label = {
        f"{r['model']} {r['preset']}": f"{model_label(r['model'])} {r['preset']}"
        for r in data["rows"]
    }
    body = [
        [kind]
        + [
            "{}/{}".format(*data["kinds"][name][kind]) if kind in data["kinds"][name] else "–"
            for name in names
        ]
        for kind in kinds
    ]
    return table(["kind", *(label.get(n, n) for n in names)], body)


COMMITTED = Path(__file__).resolve().parents[2] / "results" / "leaderboard"
README = COMMITTED.parents[1] / "README.md"
FINDINGS = COMMITTED.parents[1] / "docs" / "findings.md"


def readme_verdicts(data: dict[str, Any]) -> str:
    """Each paired comparison of the board in a line: each model's default against its best,
    and each rung against the one below."""
    said = {"default against best": "default against best", "rung": "rung against rung"}
    return "".join(
        f"- {said.get(c['kind'], c['kind'])}, {c['a']} against {c['b']}: {c['verdict']}.\n"
        for c in data["comparisons"]
    )


def readme_table(data: dict[str, Any]) -> str:
    """The README's leaderboard: every entrant, each model's best in bold, the file source's
    default preset said."""
    default = WorkspaceEnvironment.default_preset
    head = ["model", "preset", "correct", "accuracy [95 % CI]", "model calls per question",
            "tokens per question"]  # fmt: skip
    body = [
        [
            model_label(r["model"]),
            (f"**{r['preset']}**" if r["best"] else str(r["preset"]))
            + (" (the default)" if r["preset"] == default else ""),
            f"{r['correct']:g}/{r['tasks']}",
            f"{100 * r['accuracy']:.1f} % [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]",
            _fmt(r["calls"], ".2f"),
            _fmt(r["tokens"], ",.0f"),
        ]
        for r in data["rows"]
    ]
    return table(head, body)


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def markdown(data: dict[str, Any]) -> str:
    rows = data["rows"]
    n = max((r["tasks"] for r in rows), default=0)
    mdd = detectable_difference(n)
    head = ["model", "preset", "correct", "accuracy [95 % CI]", "pass^k", "calls", "tokens",
            "errors"]  # fmt: skip
    body = [
        [
            f"`{r['model']}`",
            f"**{r['preset']}**" if r["best"] else str(r["preset"]),
            f"{r['correct']:g}/{r['tasks']}",
            f"{100 * r['accuracy']:.1f} % [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]",
            "–" if r["pass_k"] is None else f"{r['pass_k']:.2f} (k={r['epochs']})",
            _fmt(r["calls"], ".2f"),
            _fmt(r["tokens"], ",.0f"),
            str(r["errors"]),
        ]
        for r in rows
    ]
    lines = [
        f"# Leaderboard: {data['task_set']}",
        "",
        "Each model of the ladder under the policies named for it, on one task set sized so "
        "that rungs 10 points apart can be told apart. Each task counts once (the interval is "
        "clustered by task); errors of the machinery are apart and in no accuracy. In bold, "
        "each model's best: the most accurate, then the fewest model calls per question, then "
        "the fewest tokens; wall time is never used. Rebuilt by `make leaderboard`.",
        "",
        table(head, body),
        f"On {n} tasks two runs can be told apart (80 % power, 5 % two-sided) when their "
        f"accuracies differ by about {mdd:.0f} points or more near 50 %."
        if mdd is not None
        else f"On {n} task(s) no difference can be detected.",
        "",
        "## Paired tests",
        "",
    ]
    for c in data["comparisons"]:
        what = "default preset against best" if c["kind"] == "default against best" else "rung"
        lines.append(f"- **{c['b']} against {c['a']}** ({what}): {c['verdict']}.")
    if not data["comparisons"]:
        lines.append("- none: one entrant per model and a single model.")
    if data.get("kinds"):
        lines += ["", "## By kind of question", "", kinds_table(data).rstrip("\n")]
    if data["missing"]:
        progress = data.get("in_progress", {})
        runs = n * max((r["epochs"] for r in rows), default=1)
        named = [
            f"{name} ({progress[name]} of {runs} task runs kept; `make leaderboard` goes on)"
            if name in progress
            else name
            for name in data["missing"]
        ]
        lines += ["", "Not finished yet: " + ", ".join(named) + "."]
    return "\n".join(lines) + "\n"
