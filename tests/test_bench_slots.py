"""The slots benchmark's figures as bench.md and docs/scale.md show them, and the docs block
that must match the committed figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evals.errors import EvalError
from lab.report.docs import block, fill
from lab.studies.serving import slots, slots_report
from lab.studies.serving.suite import doc_blocks

ROOT = Path(__file__).resolve().parents[1]


def row(engine: str, n: int, per_min: float, correct: int, **extra: Any) -> dict[str, Any]:
    return {
        "engine": engine, "slots": n, "task_runs": 60, "errors": 0, "correct": correct,
        "wall_s": 60 / per_min * 60, "runs_per_min": per_min, "turn_ms_median": 3000.0 * n,
        "turn_ms_p90": 5000.0 * n, "tokens_per_s": 10.0, "ms_per_generated": 40.0,
        "ms_per_prompt": 12.0, "first_turn_cached": 0.8, "turns": 120, "peak_rss_mb": 2000,
        "ready_s": 3.0, "load_before": 1.0, "load_after": 2.0, "run_file": f"{engine}-s{n}",
        "replay": {"requests": 16, "tokens_per_s": 20.0 * n, "request_ms_median": 6000},
        **extra,
    }  # fmt: skip


def figures() -> dict[str, Any]:
    differing = {
        "task": "07-largest", "one_slot": True, "slots": False, "turn": 2, "token": 14,
        "a": "The largest file is a|b.txt", "b": "The largest\nfile is c.txt",
    }  # fmt: skip
    agree = {"tasks": 60, "same_verdict": 59, "same_answer": 57, "differing": [differing]}
    return {
        "model": "m", "tasks": "evals/tasks/gen-test-s1000-n60.json", "preset": "penalized",
        "max_turns": 8, "threads": 2, "levels": [1, 4], "plot": "results/plots/slots.png",
        "decode": [{"batch": 1, "ms": 40.0, "ms_per_token": 40.0},
                   {"batch": 4, "ms": 144.0, "ms_per_token": 36.0}],
        "rows": [row("ours", 1, 6.0, 19), row("llama-server", 1, 2.0, 5),
                 row("ours", 4, 9.0, 18, agreement=agree),
                 row("llama-server", 4, 5.0, 5, agreement={**agree, "differing": []})],
    }  # fmt: skip


def test_the_section_says_each_target_from_the_figures() -> None:
    text = "\n".join(slots_report.render(figures()))
    assert "| ours | 4 | 9.00 | 1.50 |" in text
    assert "measured 1.50×, falls short." in text  # 2× wanted
    assert "Task runs per minute, ours / llama-server: 1: 3.00×, 4: 1.80×: pass." in text
    assert "(generated tokens per second, ours / llama-server): 1: 1.00×, 4: 1.00×: pass." in text
    assert "| 4 | 144.0 | 36.00 | 0.90 |" in text
    # A model's text in a cell cannot break the table.
    assert "The largest file is a\\|b.txt" in text and "The largest file is c.txt" in text
    assert "| ours | 4 | 07-largest | ✓ | ✗ | 2 | 14 |" in text


def test_the_docs_block_is_what_the_figures_render(tmp_path: Path) -> None:
    page = tmp_path / "scale.md"
    page.write_text("intro\n<!-- slots-table -->\nold figures\n<!-- /slots-table -->\nafter\n")
    ((_, name, text),) = slots_report.docs(figures())
    assert fill(page, name, text) and not fill(page, name, text)  # changed once, then same
    assert block(page, name) == text
    assert page.read_text().startswith("intro\n") and page.read_text().endswith("after\n")
    assert "| ours | 4 | 9.00 | 1.50 | 12,000 | 80.00 | 18/60 | 59/60 |" in text
    with pytest.raises(EvalError, match="no <!-- other -->"):
        fill(page, "other", "x")


def committed_report() -> dict[str, Any]:
    report: dict[str, Any] = json.loads((ROOT / "results" / "bench.json").read_text())
    return report


def test_the_committed_docs_blocks_match_the_committed_figures() -> None:
    """Every docs block a benchmark part writes is what its committed figures render."""
    blocks = doc_blocks(committed_report())
    assert blocks, "no benchmark part with docs blocks has committed figures"
    for page, name, text in blocks:
        assert block(ROOT / page, name) == text, (
            f"{page} {name}: run python -m lab bench --render-only"
        )


def test_a_changed_result_without_its_docs_fails_the_check(tmp_path: Path) -> None:
    """Edit a copy of the committed figures: the committed page no longer matches."""
    report = committed_report()
    edited = json.loads(json.dumps(report))
    first = edited["parts"]["slots"]["rows"][0]
    first["runs_per_min"] = (first["runs_per_min"] or 0) + 1.0
    ((page, name, text),) = [b for b in doc_blocks(edited) if b[1] == "slots-table"]
    copy = tmp_path / "scale.md"
    shutil.copy(ROOT / page, copy)
    assert block(copy, name) != text
    fill(copy, name, text)
    assert block(copy, name) == text


def test_a_peer_measured_on_the_same_requests_only_renders(tmp_path: Path) -> None:
    """llama-server through the eval is off by default (slots.PEER_EVAL): its rows hold the
    replay alone, and the section, the docs block and the plot say only what was measured."""
    s = figures()
    for r in s["rows"]:
        if r["engine"] == "llama-server":
            keep = {"engine", "slots", "peak_rss_mb", "replay", "ready_s", "load_before",
                    "load_after"}  # fmt: skip
            for key in [k for k in r if k not in keep]:
                del r[key]
            r["task_runs"] = 0
            r["replay"] = {**r["replay"], "tokens_per_s": 10.0 * r["slots"]}
    text = "\n".join(slots_report.render(s))
    assert "| llama-server | 4 | – | – |" in text
    assert "(generated tokens per second, ours / llama-server): 1: 2.00×, 4: 2.00×: pass." in text
    assert "Task runs per minute, ours / llama-server" not in text
    assert "llama-server was not run through the eval" in text
    ((_, _, block_text),) = slots_report.docs(s)
    assert "| llama-server | 4 | – | – | – | 40.00 | – | – |" in block_text
    png = slots.plot(s, tmp_path / "slots.png")
    assert png.read_bytes().startswith(b"\x89PNG")
