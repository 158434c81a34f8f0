"""The chapter's experiments hold their shapes (not exact token counts) through this harness."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lab.studies.experiments.common import Result
from lab.studies.experiments.suite import EXPERIMENTS, run_experiments, write

FAST = [
    "plan",
    "caps",
    "budgets",
    "policies",
    "permanent",
    "duplicate",
    "writes",
    "approval",
    "crash",
    "subagent",
    "finish",
    "cancel",
    "stops",
]


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {r.name: r for r in asyncio.run(run_experiments(FAST, echo=lambda _: None))}


def rows(result: Result) -> dict[str, dict[str, Any]]:
    return {str(r["run"]): r for r in result.table}


def test_shapes(results: dict[str, Result]) -> None:
    plan = results["plan"].table[0]
    assert (plan["turns"], plan["tools"], plan["status"]) == (3, 2, "completed")

    assert 3.3 <= results["caps"].figures["cost_100_over_50"] <= 4.2

    for budget in results["budgets"].table:
        assert 0 < budget["overshoot"] < budget["last turn cost"]

    policies = rows(results["policies"])
    answered = [name for name, r in policies.items() if "errors.log" in str(r["answer"])]
    assert answered == ["descriptive"]
    assert policies["fatal"]["status"] == "failed"

    permanent = rows(results["permanent"])
    assert permanent["retried to cap 12"]["turns"] == 12
    assert permanent["stop on permanent error"]["turns"] == 1

    duplicate = rows(results["duplicate"])
    plain, deduped = duplicate["duplicate call"], duplicate["duplicate call, dedupe"]
    assert deduped["tools"] < plain["tools"] and deduped["turns"] == plain["turns"]
    assert deduped["cost"] == plain["cost"] > duplicate["baseline (plan)"]["cost"]

    writes = results["writes"].figures
    assert (writes["naive_deletions"], writes["gate_deletions"]) == (1, 2)
    assert writes["replay_deleted_again"] is False

    approval = rows(results["approval"])
    assert approval["approve"]["deleted"] == ["access.log"]
    assert approval["reject with a reason"]["final words"].startswith("I did not delete")
    assert approval["reject, nothing said (harness default)"]["final words"].startswith(
        "I did not delete"
    )
    assert approval["reject, empty result written (raw)"]["final words"].startswith("Deleted")

    crash = results["crash"].figures
    assert crash == {"killed_by_signal": True, "same_cost": True, "each_tool_once": True}

    assert results["subagent"].figures == {
        "child_stopped_at_cap": True,
        "parent_within_budget": True,
    }
    finish = rows(results["finish"])
    assert finish["refusal"]["status"] == "failed"
    assert finish["429 with retry-after"]["retries"] == 1
    assert finish["429 with retry-after"]["cost"] == results["plan"].table[0]["cost"]
    assert finish["500 forever"]["status"] == "failed"

    stops = {(r["wire"], r["reason"]): r for r in results["stops"].table}
    assert len(stops) == 10 and results["stops"].figures["every_reason_seen"] is True
    assert results["stops"].figures["same_plan_cost_both_shapes"] is True
    assert stops["anthropic", "tool_use"]["what the loop did"] == "ran list_files"
    assert stops["anthropic", "end_turn"]["status"] == "completed"
    assert stops["anthropic", "max_tokens"]["what the loop did"].startswith("asked the model")
    assert stops["anthropic", "stop_sequence"]["what the loop did"].startswith("completed with")
    paused = stops["anthropic", "pause_turn"]
    assert (paused["turns"], paused["status"]) == (4, "completed")
    assert paused["cost"] > stops["anthropic", "end_turn"]["cost"]
    assert stops["anthropic", "refusal"]["status"] == stops["openai", "content_filter"]["status"]
    assert stops["anthropic", "refusal"]["status"] == "failed"
    assert stops["openai", "length"]["turns"] == stops["anthropic", "max_tokens"]["turns"] == 4

    cancel = results["cancel"].figures
    assert cancel["wired_stop_ms"] * 10 < cancel["unwired_stop_ms"]


def test_write_produces_markdown_and_json(results: dict[str, Result], tmp_path: Path) -> None:
    write(list(results.values()), tmp_path)
    text = (tmp_path / "experiments.md").read_text()
    assert text.count("\n## ") == len(FAST)
    data = json.loads((tmp_path / "experiments.json").read_text())
    assert (
        data["caps"]["figures"]["cost_100_over_50"] == results["caps"].figures["cost_100_over_50"]
    )


def test_every_experiment_is_registered() -> None:
    assert len(EXPERIMENTS) == 14
