"""Generated task families: every kind and phrasing solved by the oracle through the real loop,
refused to every scorer adversary, the same tasks from the same seed, and the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.tasks import DEFAULT_TASKS, load_tasks
from evals.workspace.generate import KINDS, PHRASINGS, generate, set_name, write
from lab.studies.adversaries import run_adversaries, weak
from serve_local.scenarios import ADVERSARIES
from tests.helpers import ROOT

COMMITTED = DEFAULT_TASKS.with_name("gen-test-s1000-n60.json")


def _pattern(template: str) -> re.Pattern[str]:
    """A phrasing with its fields as wildcards."""
    parts = re.split(r"\{\w+\}", template)
    return re.compile("^" + "(.+?)".join(map(re.escape, parts)) + "$")


def phrasing_of(kind: str, question: str) -> str:
    (template,) = [p for p in dict.fromkeys(PHRASINGS[kind]) if _pattern(p).match(question)]
    return template


# The presets that change what a run is offered or asked: the plain loop, the default, the
# listing by size, the submit tool forced, the extra read requests. Every preset runs on files6
# (tests/test_verdicts.py) and on the committed generated set (make adversaries).
DIFFERING_PRESETS = ["no-helpers", "all-helps", "by-size", "submit-forced", "read-listed"]


@pytest.mark.parametrize("seed", [0, 1000])  # the first seed of each split
async def test_the_oracle_solves_every_task_and_no_adversary_any(
    scripted_url: str, tmp_path: Path, seed: int
) -> None:
    tasks = write(seed, len(KINDS), tmp_path / "gen.json")
    assert Counter(t.kind for t in load_tasks(tasks).tasks) == Counter(KINDS)
    cells = await run_adversaries(
        tasks, scripted_url, echo=lambda _: None, presets_asked=DIFFERING_PRESETS
    )
    assert {c.column for c in cells} == set(DIFFERING_PRESETS)
    assert {c.scenario for c in cells} == {"oracle", *ADVERSARIES}
    assert weak(cells) == {}
    oracle = [c for c in cells if c.scenario == "oracle"]
    assert [c.credited for c in oracle] == [[t.id for t in load_tasks(tasks).tasks]] * len(oracle)


def one_task_per_phrasing() -> dict[str, Any]:
    """From a large generated set: the first task of every phrasing of every kind."""
    data = generate(7, 400)
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for task in data["tasks"]:
        chosen.setdefault((task["kind"], phrasing_of(task["kind"], task["question"])), task)
    wanted = {(kind, p) for kind in KINDS for p in PHRASINGS[kind]}
    assert set(chosen) == wanted  # every phrasing occurs
    return {**data, "tasks": list(chosen.values())}


async def test_the_oracle_answers_every_phrasing_of_every_kind(
    scripted_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "phrasings.json"
    path.write_text(json.dumps(one_task_per_phrasing()))
    settings = EvalSettings(
        serving=Serving(base_url=scripted_url, model="scripted:oracle"),
        tasks=path,
        out=tmp_path / "o.jsonl",
    )
    records = read_records(await run_eval(settings, echo=lambda _: None))
    wrong = {r["task_id"]: r["answer"] for r in records if not r["correct"]}
    assert wrong == {} and len(records) == sum(len(set(p)) for p in PHRASINGS.values())
    # Each task ran on its own workspace, not the default three files.
    for record in records:
        assert "errors.log" not in (record["answer"] or "")


def test_the_same_seed_gives_the_same_tasks_and_another_seed_others() -> None:
    assert generate(12, 30) == generate(12, 30)
    other = generate(13, 30)
    assert [t["workspace"] for t in other["tasks"]] != [
        t["workspace"] for t in generate(12, 30)["tasks"]
    ]


def test_the_committed_test_set_is_what_its_seed_generates(tmp_path: Path) -> None:
    again = write(1000, 60, tmp_path / "again.json", "test")
    assert again.read_text() == COMMITTED.read_text()
    taskset = load_tasks(COMMITTED)
    assert taskset.name == "gen-test-s1000-n60"
    assert set(Counter(t.kind for t in taskset.tasks)) == set(KINDS)


def test_workspaces_make_every_answer_unique() -> None:
    """Distinct sizes, and each quoted needle in one file only, on every dev and test seed."""
    for seed in [*range(0, 100, 7), *range(1000, 1100, 7)]:
        for task in generate(seed, 18)["tasks"]:
            files = task["workspace"]
            sizes = [len(c.encode()) for c in files.values()]
            assert len(set(sizes)) == len(sizes) and 3 <= len(files) <= 6
            quoted = re.findall(r'"([^"]+)"', task["question"])
            if task["kind"] in ("mentions", "value"):
                (needle,) = quoted
                assert sum(needle in c for c in files.values()) == 1, (seed, task["id"])
            if task["kind"] == "exists":
                assert quoted[0] in files
            if task["kind"] == "missing":
                assert quoted[0] not in files


def test_names_record_seed_and_split() -> None:
    assert set_name(0, 60) == "gen-dev-s0-n60"
    assert set_name(1000, 60) == "gen-test-s1000-n60"
    assert set_name(500, 10) == "gen-s500-n10"
    assert set_name(500, 10, "test") == "gen-test-s500-n10"  # a split given is recorded


def test_generate_on_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "tasks" / "dev.json"
    proc = subprocess.run(
        [sys.executable, "-m", "evals", "generate", "--split", "dev", "--n", "12", "--out", out],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    taskset = load_tasks(out)
    assert taskset.name == "gen-dev-s0-n12" and len(taskset.tasks) == 12
    assert all(t.workspace and t.grounded for t in taskset.tasks)
    assert taskset.model_dump(exclude_none=True) == load_tasks(
        write(0, 12, tmp_path / "same.json", "dev")
    ).model_dump(exclude_none=True)


def test_make_eval_takes_the_task_set() -> None:
    proc = subprocess.run(
        ["make", "-n", "eval", f"TASKS={COMMITTED.relative_to(ROOT)}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "loopbench eval" in x]
    assert "--tasks evals/tasks/gen-test-s1000-n60.json" in line


def _answer_checks_pass(task: Any, answer: str) -> bool:
    from evals.scoring import score
    from harness.state import new_run

    state = new_run("m", task.question)
    state.status, state.answer = "completed", answer
    kinds = {"answer", "contains", "contains_any", "not_contains", "regex"}
    return all(c["passed"] for c in score(task, state) if c["kind"] in kinds)


@pytest.mark.parametrize(
    ("kind", "answer", "right"),
    [
        ("exists", "Yes, {name} is there.", True),
        ("exists", "The file {name} exists in the workspace.", True),
        ("exists", "The workspace contains a file called {name}.", True),
        ("exists", "The file {name} does not exist.", False),
        # A statement about the file presupposes it is there: it affirms.
        ("exists", "{name} is 96 bytes in size.", True),
        ("exists", "{name} is in the workspace.", True),
        ("exists", "Yes or no.", False),
        ("exists", "{name} may or may not exist.", False),
        ("exists", "No, the workspace contains only a.txt and b.txt.", False),
        # A listing that holds the name among others answers nothing.
        ("exists", "a.txt  10 bytes\n{name}  96 bytes\nb.txt  20 bytes", False),
        ("missing", "No, there is no file named {name}.", True),
        ("missing", "The file {name} is not present in the workspace.", True),
        ("missing", "{name} is absent from the workspace.", True),
        ("missing", "The file {name} exists.", False),
        ("missing", "Yes.", False),
        (
            "missing",
            "The workspace contains no file by that name; there are 3, 4, 5 or 6 files.",
            False,
        ),
    ],
)
def test_a_yes_or_no_question_takes_either_wording_and_refuses_the_other_answer(
    kind: str, answer: str, right: bool
) -> None:
    from evals.tasks import TaskSet

    tasks = TaskSet.model_validate(generate(1000, 60)).tasks
    task = next(t for t in tasks if t.kind == kind)
    name = re.search(r'"([^"]+)"', task.question)
    assert name is not None
    assert _answer_checks_pass(task, answer.format(name=name.group(1))) is right
