"""Intervals on accuracies and paired comparisons of two runs: known tables, the refusal of
runs over different tasks, and the command line over real runs of the scripted provider."""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from evals.record import RunRecord
from evals.report.compare import compare
from evals.report.pairing import PairingError, paired
from evals.report.summary import summarize, summarize_run_file
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.stats import (
    accuracy,
    detectable_difference,
    pass_hat_curve,
    pass_hat_interval,
    pass_hat_k,
    tasks_needed,
    wilson,
)
from evals.tasks import DEFAULT_TASKS
from lab.studies.sweep import rewrite
from tests.helpers import ROOT, run_record


def records(outcomes: list[bool], task_set: str = "t", epoch: int = 1) -> list[RunRecord]:
    return [
        run_record(task_id=f"task{i:02d}", epoch=epoch, correct=ok, task_set=task_set)
        for i, ok in enumerate(outcomes)
    ]


def closed_form_wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The textbook formula, as an independent reference for scipy's."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 6), (2, 6), (6, 6), (11, 156), (37, 60)])
def test_wilson_interval_matches_the_closed_form(k: int, n: int) -> None:
    got = wilson(k, n)
    low, high = closed_form_wilson(k, n)
    assert got.low == pytest.approx(max(low, 0.0), abs=1e-9)
    assert got.high == pytest.approx(min(high, 1.0), abs=1e-9)
    assert got.low <= k / n <= got.high
    assert str(got).startswith(f"{k}/{n} = ")


def test_a_one_task_difference_among_six_is_inside_both_intervals() -> None:
    """2/6 against 1/6: each rate lies in the other's interval."""
    two, one = wilson(2, 6), wilson(1, 6)
    assert two.low < one.rate and one.high > two.rate


def test_none_against_all_of_six() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired(records([False] * 6), records([True] * 6), "A", "B")
    assert (result.tasks, result.correct_a, result.correct_b) == (6, 0, 6)
    assert (result.difference, result.low, result.high) == (100, 100, 100)
    assert result.p_value == pytest.approx(2 * 0.5**6)  # all six tasks one way
    assert result.only_b == [f"task{i:02d}" for i in range(6)]
    assert result.only_a == []
    assert (
        result.sentence() == "B is better by 100 points, 95 % CI [100, 100], exact test p = 0.031"
    )
    assert (
        paired(records([True] * 6), records([False] * 6), "A", "B")
        .sentence()
        .startswith("A is better by 100 points")
    )


def test_identical_runs_show_no_difference_without_warnings_or_nan() -> None:
    mixed = [True, False, True, True, False, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired(records(mixed), records(mixed), "A", "B")
    assert (result.difference, result.low, result.high, result.p_value) == (0, 0, 0, 1.0)
    assert not result.detected
    assert result.sentence() == (
        "no difference detected (B minus A: 0 points, 95 % CI [0, 0], exact test p = 1; at 80 % "
        "power 6 tasks detect a difference of 72 points or more near 50 %)"
    )


def test_near_zero_the_detectable_rise_above_the_lower_run_is_stated() -> None:
    """Near 0 % a set detects far less than near 50 %: 388 tasks tell 1 point above 0 %."""
    result = paired(records([False] * 388), records([i < 4 for i in range(388)]), "A", "B")
    assert not result.detected
    assert result.sentence().endswith(
        "388 tasks detect a difference of 10 points or more near 50 %, a rise of 1 point or "
        "more above the lower run's 0 %)"
    )
    middling = paired(records([i < 25 for i in range(60)]), records([i < 27 for i in range(60)]))
    assert middling.detectable_above_lower is None
    assert middling.sentence().endswith("detect a difference of 25 points or more near 50 %)")
    high = paired(records([i < 50 for i in range(60)]), records([i < 52 for i in range(60)]))
    assert high.sentence().endswith("a rise of 14 points or more above the lower run's 83 %)")


def test_eight_discordant_tasks_one_way_among_twenty() -> None:
    a = [i < 6 for i in range(20)]  # 6/20
    b = [i < 14 for i in range(20)]  # 14/20: tasks 6..13 right in B only
    result = paired(records(a), records(b), "A", "B")
    assert result.difference == pytest.approx(40)
    assert 0 < result.low < 40 < result.high <= 100
    assert result.p_value == pytest.approx(2 * 0.5**8)
    assert result.only_b == [f"task{i:02d}" for i in range(6, 14)]
    assert result.sentence().startswith("B is better by 40 points, 95 % CI [")
    again = paired(records(a), records(b), "A", "B")
    assert (again.low, again.high) == (result.low, result.high)  # a fixed random state


def test_discordant_tasks_both_ways_are_no_detected_difference() -> None:
    a = [i < 10 for i in range(20)]
    b = [i < 7 or 10 <= i < 12 for i in range(20)]  # 3 right in A only, 2 in B only
    result = paired(records(a), records(b), "A", "B")
    assert len(result.only_a) == 3 and len(result.only_b) == 2
    assert result.low < 0 < result.high and not result.detected
    assert result.p_value == pytest.approx(1.0)
    assert result.sentence().startswith("no difference detected (B minus A: -5 points, 95 % CI")


def test_the_verdict_follows_the_exact_test_not_the_bootstrap() -> None:
    """60 tasks, four right in B only: the percentile interval leaves out 0, but no exact
    p-value on four discordant tasks can fall below 2 * 0.5**4, so nothing is detected."""
    result = paired(records([False] * 60), records([True] * 4 + [False] * 56), "A", "B")
    assert result.low > 0 and result.p_value == pytest.approx(2 * 0.5**4)
    assert not result.detected
    assert result.sentence().startswith("no difference detected (B minus A: +7 points, 95 % CI [")
    assert "exact test p = 0.12; at 80 % power 60 tasks detect a difference of 25 points" in (
        result.sentence()
    )


def epochs(outcomes: list[bool], n: int) -> list[dict[str, Any]]:
    return [r for e in range(1, n + 1) for r in records(outcomes, epoch=e)]


def test_ten_identical_greedy_epochs_weigh_what_one_does() -> None:
    a, b = [True] * 2 + [False] * 4, [True] * 4 + [False] * 2
    once, tenfold = paired(records(a), records(b), "A", "B"), paired(epochs(a, 10), epochs(b, 10))
    assert (tenfold.p_value, tenfold.low, tenfold.high) == (once.p_value, once.low, once.high)
    assert not tenfold.detected and tenfold.tasks == 6
    assert (accuracy(epochs(b, 10)).low, accuracy(epochs(b, 10)).high) == (
        wilson(4, 6).low,
        wilson(4, 6).high,
    )
    assert str(accuracy(epochs(b, 10))) == f"{wilson(4, 6)} (10 identical epochs count once)"
    assert str(accuracy(records(b))) == str(wilson(4, 6))


def test_sampled_epochs_get_an_interval_clustered_by_task() -> None:
    """Epochs that disagree: each task is its share of right epochs, and the interval is a t
    interval on those shares (twelve tasks, so no narrower for having four epochs each)."""
    shares = [1, 1, 0.75, 0.5, 0.5, 0.25, 0, 0, 0, 0, 1, 0.25]
    runs = [
        run_record(task_id=f"task{i:02d}", epoch=e, correct=e <= 4 * share, task_set="t")
        for i, share in enumerate(shares)
        for e in range(1, 5)
    ]
    got = accuracy(runs)
    assert got.right is None and got.tasks == 12 and got.epochs == 4
    assert got.rate == pytest.approx(sum(shares) / 12)
    mean, sd = sum(shares) / 12, statistics.stdev(shares)
    half = 2.200985160082949 * sd / math.sqrt(12)  # t(0.975, 11)
    assert (got.low, got.high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert "clustered by task" in str(got)


def test_power_figures_are_statsmodels_own() -> None:
    """Cohen's h for 80 % power at 5 % with two samples of n: 2.8016 * sqrt(2 / n); two rates
    either side of 50 % that far apart differ by sin(h / 2)."""
    h60 = 2.8016 * math.sqrt(2 / 60)
    assert detectable_difference(60) == pytest.approx(100 * math.sin(h60 / 2), abs=0.05)
    assert round(detectable_difference(60) or 0) == 25
    assert round(detectable_difference(6) or 0) == 72
    assert detectable_difference(60, baseline=0.25) == pytest.approx(24.4, abs=0.1)
    assert detectable_difference(6, baseline=0.5) is None  # no rise from 50 % within 100 %
    assert detectable_difference(1) is None
    assert tasks_needed(10, 0.5) == 388 and tasks_needed(10, 0.25) == 328
    assert tasks_needed(80, 0.5) is None  # past 100 %


def test_a_task_that_ran_more_epochs_in_one_run_still_counts_once() -> None:
    a = records([True, True, False]) + records([False, False, False], epoch=2)
    result = paired(a, records([True, False, False]), "A", "B")
    assert result.tasks == 3 and result.correct_a == pytest.approx(1.0)
    assert result.only_a == ["task01"] and result.only_b == ["task00"]


def test_runs_over_different_tasks_are_refused() -> None:
    with pytest.raises(PairingError, match="only A has task05; only B has task06"):
        paired(records([True] * 6), [*records([True] * 5), records([True] * 7)[6]], "A", "B")
    with pytest.raises(PairingError, match="different task sets: A ran files6, B ran gen"):
        paired(records([True] * 6, "files6"), records([True] * 6, "gen"), "A", "B")


# -- through real runs -----------------------------------------------------------------------


def run(url: str, folder: Path, model: str, tasks: Path = DEFAULT_TASKS) -> tuple[Path, list[str]]:
    lines: list[str] = []
    out = folder / f"{model.removeprefix('scripted:')}-{tasks.stem}.jsonl"
    settings = EvalSettings(
        serving=Serving(base_url=url, model=model), out=out, label=model, tasks=tasks
    )
    return asyncio.run(run_eval(settings, echo=lines.append, summarize=summarize_run_file)), lines


def evals(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m evals`` from this checkout, whatever the folder it runs in."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


def test_every_printed_accuracy_carries_its_interval(scripted_url: str, tmp_path: Path) -> None:
    oracle, lines = run(scripted_url, tmp_path, "scripted:oracle")
    guess, _ = run(scripted_url, tmp_path, "scripted:adversary-guess")
    interval = str(wilson(6, 6))
    assert f"correct={interval}" in lines[-2]
    assert f"correct={interval}" in oracle.with_suffix(".summary.md").read_text()
    table = compare([oracle, guess])
    assert f"| accuracy | {interval} | {wilson(0, 6)} |" in table
    rewrite([oracle, guess], tmp_path / "sweep")
    sweep = (tmp_path / "sweep" / "sweep.md").read_text()
    assert interval in sweep and str(wilson(0, 6)) in sweep
    data = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert data["runs"][0]["accuracy_ci95"] == [round(wilson(6, 6).low, 4), 1.0]


def test_compare_paired_on_the_command_line(scripted_url: str, tmp_path: Path) -> None:
    oracle, _ = run(scripted_url, tmp_path, "scripted:oracle")
    guess, _ = run(scripted_url, tmp_path, "scripted:adversary-guess")
    proc = evals("compare", "--paired", str(guess), str(oracle), "--out", "p.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "scripted:oracle is better by 100 points, 95 % CI [100, 100], exact test p = 0.031" in (
        proc.stdout
    )
    assert "timeout, count, notes, read_all, largest, rotate" in proc.stdout
    assert (tmp_path / "p.md").read_text().startswith("# Paired comparison")

    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(DEFAULT_TASKS.read_text()), "name": "other"}))
    renamed, _ = run(scripted_url, tmp_path, "scripted:oracle", other)
    proc = evals("compare", "--paired", str(oracle), str(renamed), cwd=tmp_path)
    assert proc.returncode == 1
    assert "different task sets" in proc.stderr and "files6" in proc.stderr
    assert "other" in proc.stderr

    proc = evals("compare", "--paired", str(oracle), cwd=ROOT)
    assert proc.returncode == 2 and "name two run files" in proc.stderr


def test_power_on_the_command_line(tmp_path: Path) -> None:
    proc = evals("power", "--tasks", str(DEFAULT_TASKS.with_name("gen-test-s1000-n60.json")),
                 cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "60 tasks" in proc.stdout
    assert "the smallest detectable difference near 50 %: 25 points" in proc.stdout
    assert "a difference of 10 points over 50 %: 388 tasks" in proc.stdout
    proc = evals("power", "--baseline", "0.25", "--difference", "20", cwd=ROOT)
    assert "6 tasks" in proc.stdout and "a difference of 20 points over 25 %: 88 tasks" in (
        proc.stdout
    )
    bad = evals("power", "--baseline", "3", cwd=ROOT)
    assert bad.returncode == 2 and "from 0 to 1" in bad.stderr
    missing = evals("power", "--tasks", str(tmp_path / "nope.json"), cwd=ROOT)
    assert missing.returncode == 2 and "nope.json" in missing.stderr


def test_a_task_set_changed_under_the_same_name_is_refused() -> None:
    hashes = {"task_hash": "aaaa", "checks_hash": "c1"}
    a = [r.model_copy(update=hashes) for r in records([True] * 3)]
    b = [r.model_copy(update=hashes) for r in records([False] * 3)]
    assert paired(a, b).tasks == 3
    b[1].task_hash = "bbbb"
    with pytest.raises(PairingError, match=r"task task01 was asked differently .*aaaa in A, bbbb"):
        paired(a, b, "A", "B")
    b[1].task_hash = "aaaa"
    b[2].checks_hash = "c2"
    with pytest.raises(PairingError, match=r"judged by other checks.*rescore both runs first"):
        paired(a, b, "A", "B")
    # Records written before tasks were hashed pair by name and id, as before.
    assert paired(records([True] * 3), b, "A", "B").tasks == 3


def test_pass_hat_k_is_tau_benchs_estimator_over_tasks() -> None:
    """A right in 2 of 4 epochs, B in 4 of 4: pass^k is the mean over the two tasks of
    C(c, k) / C(4, k), the chance that k epochs drawn from a task's four are all right."""
    outcomes = {"A": [True, False, True, False], "B": [True] * 4}
    runs = [
        run_record(task_id=t, epoch=e, correct=ok, task_set="t")
        for t, oks in outcomes.items()
        for e, ok in enumerate(oks, start=1)
    ]
    assert pass_hat_k(runs, 1) == pytest.approx((2 / 4 + 1) / 2)
    assert pass_hat_k(runs, 2) == pytest.approx((1 / 6 + 1) / 2)
    assert pass_hat_k(runs, 4) == pytest.approx((0 + 1) / 2)
    assert pass_hat_k(runs, 5) is None  # no task has five epochs
    assert pass_hat_curve(runs) == {"1": 0.75, "2": 0.5833, "3": 0.5, "4": 0.5}
    low, high = pass_hat_interval(runs, 2) or (None, None)
    assert low is not None and high is not None and low < pass_hat_k(runs, 2) < high  # type: ignore[operator]
    # Every task right in all its epochs or wrong in some: a redraw of the tasks can only
    # repeat them, so the interval is Wilson's over the tasks, never [0, 0] for none right.
    none_right = [
        run_record(task_id=t, epoch=e, correct=False, task_set="t")
        for t in "ABCDEFGH"
        for e in (1, 2)
    ]
    assert pass_hat_interval(none_right, 1) == pytest.approx((0.0, wilson(0, 8).high))
    assert pass_hat_interval(none_right, 1)[1] > 0.3  # type: ignore[index]
    assert pass_hat_interval(runs, 4) == pytest.approx((wilson(1, 2).low, wilson(1, 2).high))
    # One epoch each: pass^1 is the accuracy, and the summary keeps it beside pass_k.
    summary = summarize(records([True, False, True]))
    assert summary["pass_hat_k"] == {"1": 0.6667} and summary["pass_k"] == pytest.approx(2 / 3)


def test_wilsons_interval_in_closed_form_is_scipys() -> None:
    from scipy.stats import binomtest

    for n in (1, 2, 6, 20, 60, 388):
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            got = wilson(k, n)
            assert (got.low, got.high) == (float(ci.low), float(ci.high)), (k, n)


def test_the_commands_declare_their_flags_without_the_heavy_packages() -> None:
    """``python -m evals --help`` and every subcommand's flags load no statistics package and no
    MCP SDK: those are imported by the code that computes a figure or starts a server."""
    code = (
        "import sys\n"
        "from evals.cli import parser\n"
        "from lab.cli import parser as lab_parser\n"
        "parser(), lab_parser()\n"
        "heavy = ('scipy', 'statsmodels', 'mcp', 'inspect_ai')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout
