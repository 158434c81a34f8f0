"""make bench's draft part: recorded turns replayed with the draft off and on, on a real model."""

from __future__ import annotations

from typing import Any

from lab.studies.serving import draft
from lab.studies.serving.suite import PARTS


def test_recorded_turns_are_the_requests_a_run_sent() -> None:
    turns = draft.transcript_turns(draft.SIX_TASKS)
    assert turns, "the committed six-task transcripts are missing"
    for turn in turns:
        assert turn["messages"][0]["role"] == "system"
        assert turn["messages"][-1]["role"] in ("user", "tool")  # what a reply answers
    assert len(draft.transcript_turns(draft.GENERATED, 2)) >= 2


def test_a_packaged_model_is_replayed_with_the_draft_off_and_on() -> None:
    turns = draft.transcript_turns(draft.SIX_TASKS)[:2]
    lines: list[str] = []
    figures = draft.measure("smollm2-135m-instruct", turns, lines.append)
    assert figures["turns"] == 2
    assert figures["identical"] + len(figures["differ"]) == 2
    for who in ("off", "on"):
        side = figures[who]
        assert side["generated_ms_per_token"] and side["completion_tokens"] > 0
        assert side["peak_rss_mb"] and side["peak_rss_mb"] > 50
    assert figures["drafted_per_turn"] is not None and figures["kept_per_turn"] is not None
    assert figures["kept_per_turn"] <= figures["drafted_per_turn"]
    assert "smollm2-135m-instruct: identical" in lines[0]
    assert "draft" in PARTS


def _figures(identical: int, ratio_on: float) -> dict[str, Any]:
    side = {
        "generated_ms_per_token": 10.0, "prompt_ms_per_token": 2.0, "wall_ms_per_turn": 900.0,
        "completion_tokens": 100, "peak_rss_mb": 300.0,
    }  # fmt: skip
    model = {
        "turns": 4, "identical": identical,
        "differ": [f"turn{i}" for i in range(4 - identical)],
        "off": side, "on": {**side, "generated_ms_per_token": 10.0 * ratio_on},
        "drafted_per_turn": 20.0, "kept_per_turn": 8.0, "kept_share": 0.4,
    }  # fmt: skip
    return {
        "models": {"m": model},
        "sources": {"six_tasks": "a", "generated": "b", "bfcl": "c"},
        "max_tokens": 256, "threads": 2, "draft_tokens": 10, "default_model": "m",
        "default_ratio": ratio_on, "default_identical": identical == 4,
        "identical_everywhere": identical == 4, "load_before": 0.1, "load_after": 0.2,
    }  # fmt: skip


def test_the_draft_is_on_by_default_only_when_every_reply_is_identical_and_faster() -> None:
    faster_but_one_differs = "\n".join(draft.render(_figures(3, 0.6)))
    assert "stays off by default" in faster_but_one_differs
    assert "falls short" in faster_but_one_differs
    assert "`turn0`" in faster_but_one_differs and "| m | 3/4 |" in faster_but_one_differs
    identical_but_slower = "\n".join(draft.render(_figures(4, 1.1)))
    assert "stays off by default" in identical_but_slower
    identical_and_faster = "\n".join(draft.render(_figures(4, 0.7)))
    assert "warrant the draft on by default" in identical_and_faster
    assert ": pass (0.700×" in identical_and_faster
