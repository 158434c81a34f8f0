"""The scorer adversaries against a task set: ``python -m lab adversaries [--tasks FILE]``.

Two kinds. Strategies derived from each task's typed answer (:mod:`lab.studies.strategies`)
answer after listing and reading every file: constants, first, last, largest, smallest,
hedges, ranked lists, echoes; they are judged per family against the task set's own chance
level. Then the scripted scenarios (``serve_local.scenarios.ADVERSARIES``), which skip the
work, or do it and then answer with something that is not an answer: every one runs through
the real loop and runner under every preset, beside the oracle; a task any adversary is
credited with has a weak check, and the command says which. The scripted server runs in this
process unless ``--base-url`` names one.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.database.sql.answer_key import answer as sql_answer
from evals.markdown import table
from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.tasks import DEFAULT_TASKS, load_tasks
from harness.presets import PLAIN, preset, presets
from lab.studies.strategies import FamilyReport, judge
from lab.studies.strategies import markdown as strategies_markdown
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from serve_local.scenarios import ADVERSARIES

ORACLE = "oracle"


def adversary_names() -> list[str]:
    return sorted(ADVERSARIES)


@contextmanager
def scripted_server(base_url: str | None) -> Iterator[str]:
    if base_url:
        yield base_url
        return
    with running_server(create_app(ScriptedBackend(answer_keys=[sql_answer]))) as url:
        yield url


@dataclass
class Cell:
    scenario: str
    column: str
    correct: int
    runs: int
    credited: list[str]  # task ids scored correct
    solver: str = "agent"  # a workflow's cell is named by its solver, not a preset


async def _cell(
    url: str, scenario: str, chosen: str, tasks: Path, scratch: Path, solver: str = "agent"
) -> Cell:
    """``scenario`` on ``tasks`` under the preset ``chosen`` (or, for a workflow, ``solver``: the
    cell is named by the solver)."""
    column = chosen if solver == "agent" else solver
    out = scratch / f"{scenario}-{column}.jsonl"
    settings = EvalSettings(
        serving=Serving(base_url=url, model=f"scripted:{scenario}", concurrency=4),
        tasks=tasks,
        preset=preset(chosen),
        loop=eval_loop(max_turns=8),
        out=out,
        solver=solver,
    )
    records = read_runs(await run_eval(settings, echo=lambda _: None))
    credited = [r.task_id for r in records if r.correct]
    return Cell(scenario, column, len(credited), len(records), credited, solver)


async def run_adversaries(
    tasks: Path = DEFAULT_TASKS,
    base_url: str | None = None,
    echo: Callable[[str], None] = print,
    presets_asked: list[str] | None = None,
    scenarios: list[str] | None = None,
    solvers: list[str] | None = None,
) -> list[Cell]:
    """The oracle and every adversary (or ``scenarios``) under each preset (default: every
    preset), and under each workflow of ``solvers`` (a column each, after the presets)."""
    load_tasks(tasks)  # a bad task file fails before any run
    cells = []
    with scripted_server(base_url) as url, tempfile.TemporaryDirectory() as scratch:
        for scenario in scenarios or [ORACLE, *adversary_names()]:
            for column in presets_asked if presets_asked is not None else list(presets()):
                cell = await _cell(url, scenario, column, tasks, Path(scratch))
                cells.append(cell)
            for solver in (solvers or []) if scenario != ORACLE else []:  # the oracle is an agent
                cell = await _cell(url, scenario, PLAIN, tasks, Path(scratch), solver)
                cells.append(cell)
            row = [c for c in cells if c.scenario == scenario]
            echo(f"{scenario}: " + ", ".join(f"{c.column} {c.correct}/{c.runs}" for c in row))
    return cells


def weak(cells: list[Cell]) -> dict[str, set[str]]:
    """Task id -> the adversaries credited with it under the agent loop (under a workflow the
    code gathers the evidence, so an adversary is credited wherever its words are right)."""
    found: dict[str, set[str]] = {}
    for c in cells:
        if c.scenario != ORACLE and c.solver == "agent":
            for task in c.credited:
                found.setdefault(task, set()).add(c.scenario)
    return found


def derived(tasks: Path) -> list[FamilyReport]:
    """The strategies derived from each task's typed answer, over every task that has one."""
    with tempfile.TemporaryDirectory() as scratch:
        return asyncio.run(judge(load_tasks(tasks), Path(scratch)))


def markdown(cells: list[Cell], tasks: Path, reports: list[FamilyReport] | None = None) -> str:
    columns = list(dict.fromkeys(c.column for c in cells))
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    by = {(c.scenario, c.column): c for c in cells}

    def mark(c: Cell) -> str:
        named = c.credited and c.scenario != ORACLE
        return f"{c.correct}/{c.runs}" + (f" ({', '.join(c.credited)})" if named else "")

    rows = [[s, *(mark(by[s, p]) if (s, p) in by else "–" for p in columns)] for s in scenarios]
    problems = weak(cells)
    missed = [c.column for c in cells if c.scenario == ORACLE and c.correct < c.runs]
    only_oracle = {c.scenario for c in cells} == {ORACLE}
    said = [f"The oracle misses tasks under {', '.join(missed)}."] if missed else []
    if only_oracle:
        if not missed:
            said.append("The oracle gets every task under every preset.")
    elif problems:
        weak_checks = (
            f"{t} credited to {', '.join(sorted(a))}" for t, a in sorted(problems.items())
        )
        said.append("Weak checks: " + "; ".join(weak_checks))
    else:
        said.append(
            ("Under the agent loop no" if any(c.solver != "agent" for c in cells) else "No")
            + " adversary is credited with any task: every check refuses what is not an answer."
        )
    flows = [p for p in columns if any(c.column == p and c.solver != "agent" for c in cells)]
    if flows and not only_oracle:
        said.append(
            f"Under the workflows ({', '.join(flows)}) the code lists and reads every file, so "
            "the evidence checks pass whatever the model says and only the answer check "
            "decides: an adversary is credited there exactly where its fixed words are the "
            "right answer, the floor a workflow's score is read against."
        )
    verdict = " ".join(said)
    strategies = []
    if reports:
        strategies = [
            "## Strategies derived from each task",
            "",
            "Each answers after listing and reading every file through the real loop, so the "
            "evidence is there and only the reading of the answer decides "
            "(`lab/studies/strategies.py`). Chance: the family's mean of one over its number "
            "of candidates. Credited: tasks credited, with the 95 % Wilson interval.",
            "",
            strategies_markdown(reports),
            "",
            "## Scripted scenarios",
            "",
        ]
    scenarios_line = (
        "the oracle's correct task runs under every preset, through the real loop and runner; "
        "the adversaries not run (`--strategies-only`)."
        if only_oracle
        else "correct task runs for the oracle and each adversary (scripted scenarios in "
        "`serve_local/scenarios.py`) under every preset, through the real loop and runner."
    )
    return "\n".join(
        [
            "# Scorer adversaries",
            "",
            f"Task set `{load_tasks(tasks).name}`. Written by `python -m lab adversaries`.",
            "",
            *strategies,
            f"Scripted scenarios: {scenarios_line}",
            "",
            *([table(["scenario", *columns], rows), verdict] if cells else []),
            "",
        ]
    )


def write(
    cells: list[Cell], tasks: Path, out: Path, reports: list[FamilyReport] | None = None
) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "task_set": load_tasks(tasks).name,
        "strategies": [
            {
                "family": r.family,
                "tasks": r.tasks,
                "chance": r.chance,
                "cells": [vars(c) for c in r.cells.values()],
                "above_chance": sorted(r.above),
                "problems": r.problems(),
            }
            for r in reports or []
        ],
        "cells": [vars(c) for c in cells],
        "weak": {t: sorted(a) for t, a in weak(cells).items()},
    }
    stem = f"adversaries-{data['task_set']}"
    md, js = out / f"{stem}.md", out / f"{stem}.json"
    md.write_text(markdown(cells, tasks, reports), encoding="utf-8")
    js.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return [md, js]


def main(
    tasks: Path,
    base_url: str | None,
    out: Path,
    strategies_only: bool = False,
    solvers: list[str] | None = None,
) -> int:
    reports = derived(tasks)
    print(strategies_markdown(reports))
    scenarios = [ORACLE] if strategies_only else None
    cells = asyncio.run(run_adversaries(tasks, base_url, scenarios=scenarios, solvers=solvers))
    for path in write(cells, tasks, out, reports):
        print(f"wrote {path}")
    oracle_missed = [
        c for c in cells if c.scenario == ORACLE and c.correct < c.runs and c.solver == "agent"
    ]
    problems = [p for r in reports for p in r.problems()]
    return 1 if weak(cells) or oracle_missed or problems else 0
