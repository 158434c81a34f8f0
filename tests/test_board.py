"""What the report says before how it looks: which run is the user's, which committed runs it
is set against, and how each task set's leaderboard folds repeats (``evals.report.board``)."""

from __future__ import annotations

from pathlib import Path

from evals.record import PresetRecord
from evals.report.board import MATRIX_RUNS, board, configuration
from evals.report.compare import Run
from evals.report.summary import summarize
from serve_local.catalogue import DEFAULT_NAME
from tests.helpers import run_record

SMALL, TINY = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"
TASKS = [f"t{i:02d}" for i in range(20)]


def run(
    label: str,
    model: str,
    right: int,
    when: str,
    policy: str = "all-helps",
    solver: str = "agent",
    folder: str = "runs",
    task_set: str = "gen-test",
    turns: int = 2,
    hashes: str = "h",
    sql: bool = False,
) -> Run:
    """A run of 20 tasks, the first ``right`` of them right."""
    records = [
        run_record(
            label=label,
            model=model,
            preset=PresetRecord(name=policy, settings={}) if solver == "agent" else None,
            solver=solver,
            task_set=task_set,
            task_id=task,
            task_hash=f"{hashes}{task}",
            question=f"question {task}",
            status="answered",
            correct=i < right,
            turns=turns,
            prompt_tokens=100 * turns,
            turn_latency_ms=[1000.0] * turns,
            timestamp=f"2026-12-01T{when}:00+00:00",
            database="sqlite" if sql else None,
        )
        for i, task in enumerate(TASKS)
    ]
    return Run(label, Path(folder) / f"{label}.jsonl", records, summarize(records))


def test_the_newest_run_is_set_against_the_references_of_its_task_set() -> None:
    runs = [
        run("default-old", DEFAULT_NAME, 8, "01:00"),
        run("default-plain", DEFAULT_NAME, 9, "02:00", policy="all-helps", turns=3),
        run("default-best", DEFAULT_NAME, 14, "03:00", policy="read-listed"),
        run("small-best", SMALL, 6, "03:00", policy="focused"),
        run("small-worse", SMALL, 2, "03:30", policy="guarded"),
        run("oracle", "scripted:oracle", 20, "04:00"),
        run("old-tiny", TINY, 19, "04:00", folder="superseded/runs"),
        run("elsewhere", DEFAULT_NAME, 20, "04:30", task_set="files6"),
        run("mine", TINY, 3, "05:00", policy="focused"),
    ]
    made = board(runs)
    (focus,) = made.focus
    assert focus.entry.run.label == "mine" and focus.task_set == "gen-test"
    roles = {r.entry.run.label: r.roles for r in focus.references}
    # Two runs of one configuration: the later stands for both.
    assert roles == {
        "default-plain": ["default model, default preset (all-helps)"],
        "default-best": ["default model, its best"],
        "small-best": ["ladder model, its best"],
    }
    best = next(r for r in focus.references if r.entry.run.label == "default-best")
    assert best.detected and best.better == "reference"
    assert best.headline == "the reference is better by 55 points"
    assert (
        "exact test p = " in best.verdict
        and "0 right only in your run, 11 only in the reference" in best.verdict
    )
    small = next(r for r in focus.references if r.entry.run.label == "small-best")
    assert not small.detected and small.better is None
    assert small.headline.startswith("no difference detected (the set detects ")
    # The focus run's set comes first; the other set keeps its own section.
    assert [s.task_set for s in made.sections] == ["gen-test", "files6"]


def test_one_run_in_two_roles_is_listed_once_with_both() -> None:
    runs = [
        run("plain", DEFAULT_NAME, 12, "01:00"),
        run("worse", DEFAULT_NAME, 4, "02:00", policy="focused"),
        run("mine", SMALL, 12, "03:00"),
    ]
    (focus,) = board(runs).focus
    (only,) = focus.references
    assert only.entry.run.label == "plain"
    assert only.roles == ["default model, default preset (all-helps)", "default model, its best"]
    assert only.headline.startswith("no difference detected")


def test_sql_runs_are_set_against_the_analyst_policy() -> None:
    runs = [
        run("plain", DEFAULT_NAME, 5, "01:00", policy="all-helps", sql=True, task_set="sql"),
        run("analyst", DEFAULT_NAME, 4, "01:30", policy="analyst", sql=True, task_set="sql"),
        run("chain", DEFAULT_NAME, 10, "02:00", solver="chain", sql=True, task_set="sql"),
        run("mine", SMALL, 1, "03:00", solver="chain", sql=True, task_set="sql"),
    ]
    (focus,) = board(runs).focus
    roles = {r.entry.run.label: r.roles for r in focus.references}
    assert roles == {
        "analyst": ["default model, default preset (analyst)"],
        "chain": ["default model, its best"],
    }


def test_references_over_other_tasks_of_the_same_name_are_not_paired() -> None:
    runs = [run("old", DEFAULT_NAME, 10, "01:00", hashes="x"), run("mine", SMALL, 1, "02:00")]
    (focus,) = board(runs).focus
    (ref,) = focus.references
    assert ref.headline == "not paired" and not ref.detected
    assert "task t00 was asked differently" in ref.verdict and "task_hash xt00" in ref.verdict


def test_repeats_fold_into_the_latest_and_asides_are_marked() -> None:
    runs = [
        run("a1", DEFAULT_NAME, 10, "01:00"),
        run("a2", DEFAULT_NAME, 11, "02:00"),
        run("a3", DEFAULT_NAME, 12, "01:30"),
        run("b", SMALL, 5, "01:00"),
        run("oracle", "scripted:oracle", 20, "01:00"),
        run("old", TINY, 1, "01:00", folder="superseded/runs"),
        run("mine-scripted", "scripted:plan", 7, "09:00"),
    ]
    assert configuration(runs[0]) == configuration(runs[1]) != configuration(runs[3])
    made = board(runs)
    (section,) = made.sections
    assert section.collapsed == 2
    rows = {e.run.label: e for e in section.entries}
    assert set(rows) == {"a2", "b", "oracle", "old", "mine-scripted"}
    assert rows["a2"].repeats == 3
    assert rows["oracle"].hidden == "scripted" and rows["old"].hidden == "superseded"
    # The user's own run is shown even when scripted, and is never anyone's reference.
    assert rows["mine-scripted"].focus and rows["mine-scripted"].hidden is None
    assert [e.run.label for e in section.entries] == ["oracle", "a2", "mine-scripted", "b", "old"]
    # The matrix: the focus run, its references, then the leaderboard's visible rows.
    assert [e.run.label for e in section.matrix] == ["mine-scripted", "a2", "b"]


def test_the_matrix_is_capped_with_the_focus_and_references_first() -> None:
    runs = [run(f"p{i}", DEFAULT_NAME, 19 - i, "01:00", policy=f"p{i}") for i in range(12)]
    runs.append(run("mine", TINY, 0, "02:00"))
    (section,) = board(runs).sections
    labels = [e.run.label for e in section.matrix]
    assert len(labels) == MATRIX_RUNS and labels[:2] == ["mine", "p0"]
    assert labels[2:] == [f"p{i}" for i in range(1, MATRIX_RUNS - 1)]


def test_focus_named_overrides_the_newest() -> None:
    runs = [run("older", SMALL, 3, "01:00"), run("newer", DEFAULT_NAME, 4, "02:00")]
    made = board(runs, [Path("runs/older.jsonl")])
    assert [f.entry.run.label for f in made.focus] == ["older"]
    assert [r.entry.run.label for r in made.focus[0].references] == ["newer"]


def test_no_runs_no_board() -> None:
    made = board([])
    assert made.focus == [] and made.sections == []
