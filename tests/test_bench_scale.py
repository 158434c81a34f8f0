"""The ``scale`` and ``peer`` benchmark parts without a real model: the scripted half of
``scale`` on a small configuration, and both parts' sections rendered from their figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals.record import RunRecord
from lab.studies.serving import peer, scale
from lab.studies.serving.common import server_process
from lab.studies.serving.suite import PARTS
from serve_local.process import serve_command
from tests.helpers import run_record

ROW_KEYS = {
    "concurrency", "wall_s", "task_runs", "runs_per_s", "speedup", "turns", "mean_turn_ms",
    "correct", "not_run", "same_records", "differing", "server_software", "load_before",
    "tool_runs", "length_turns",
}  # fmt: skip


def test_both_parts_are_registered() -> None:
    assert PARTS["scale"] is scale.PART
    assert PARTS["peer"] is peer.PART


@pytest.fixture(scope="module")
def scripted_run() -> tuple[dict[str, Any], list[str]]:
    """The scripted half of ``scale``: 2 epochs at concurrency 1 then 4, 50 ms a reply."""
    lines: list[str] = []
    return scale.scripted(epochs=2, latency_ms=50, levels=(1, 4), echo=lines.append), lines


def test_scripted_scale_gives_the_same_records_at_every_concurrency(
    scripted_run: tuple[dict[str, Any], list[str]],
) -> None:
    figures, lines = scripted_run

    assert [r["concurrency"] for r in figures["rows"]] == [1, 4]
    for row in figures["rows"]:
        assert set(row) == ROW_KEYS
        assert row["task_runs"] == 12 and row["not_run"] == 0
        assert row["correct"] == 12  # the oracle solves every task
        assert row["same_records"] and row["differing"] == []
        assert row["server_software"][0].startswith("loopbench serve_local")
    assert figures["same_records"] is True
    assert figures["speedup"] == figures["rows"][-1]["speedup"]
    assert {"tasks", "epochs", "latency_ms", "target", "model"} <= set(figures)
    assert figures["tasks"] == 6 and figures["epochs"] == 2 and figures["model"] == scale.ORACLE
    assert any("scripted c4" in line for line in lines)

    section = "\n".join(scale.render({"scripted": figures}))
    assert "- Target speedup ≥ 10× at concurrency 4: measured " in section
    verdict = "pass" if figures["speedup"] >= 10 else "falls short"
    assert f"{figures['speedup']:.2f}×, {verdict}." in section
    assert "at every concurrency: yes." in section


def test_the_real_model_section_renders_figures_from_the_runner(
    tmp_path: Path, scripted_run: tuple[dict[str, Any], list[str]]
) -> None:
    """The real-model half's figures as ``over_levels`` produces them, here on the scripted
    provider (the same code path, no model)."""
    cmd = serve_command("scripted", log_level="warning")
    servers = []
    with server_process(cmd) as (url, _, _):
        for name, slots in (("one", 1), ("four", 4)):
            figures = scale.over_levels(
                url, scale.ORACLE, (1, 4), tmp_path, lambda _: None, name=name,
                max_turns=scale.REAL_MAX_TURNS, preset_name=scale.REAL_PRESET,
            )  # fmt: skip
            servers.append({**figures, "slots": slots})
    assert all(s["same_records"] and s["preset"] == "penalized" for s in servers)
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "four-c1.jsonl", "four-c4.jsonl", "one-c1.jsonl", "one-c4.jsonl",
    ]  # fmt: skip

    section = "\n".join(scale.render({"scripted": scripted_run[0], "real": {"servers": servers}}))
    assert "(b) The real model `scripted:oracle`" in section
    assert "at most 4 turns" in section
    assert "never re-implements batching" in section
    assert "one (1 slot): loopbench serve_local" in section
    assert "four (4 slots): loopbench serve_local" in section
    assert "|  | one c1 | one c4 | four c1 | four c4 |" in section
    assert "| correct | 6/6 | 6/6 | 6/6 | 6/6 |" in section
    assert "| same records as c1 | yes | yes | yes | yes |" in section


def _record(**changes: Any) -> RunRecord:
    record = {
        "task_id": "count", "epoch": 1, "status": "completed", "turns": 3, "tool_runs": 2,
        "prompt_tokens": 10, "completion_tokens": 5, "answer": "3", "correct": True,
        "wall_ms": 100.0, "mean_turn_ms": 30.0,
    }  # fmt: skip
    return run_record(**{**record, **changes})


def test_records_differ_by_outcome_not_by_timing() -> None:
    assert scale.differing([_record()], [_record(wall_ms=5.0, mean_turn_ms=1.0)]) == []
    assert scale.differing([_record()], [_record(answer="three")]) == ["count e1"]
    assert scale.differing([_record()], [_record(epoch=2)]) == ["count e1", "count e2"]


def _reply(ms_per_token: float, text: str, tokens: int = 100) -> dict[str, Any]:
    return {
        "wall_ms": ms_per_token * tokens + 50,
        "prompt_tokens": 40,
        "completion_tokens": tokens,
        "prompt_n": 20,
        "prompt_ms": 100.0,
        "predicted_n": tokens,
        "predicted_ms": ms_per_token * tokens,
        "finish_reason": "length",
        "text": text,
    }


@pytest.mark.parametrize(("ours_ms", "verdict"), [(22.0, "pass"), (25.0, "falls short")])
def test_peer_renders_its_target_from_the_medians(ours_ms: float, verdict: str) -> None:
    rows = [
        {
            "prompt": f"prompt {i}",
            "ours": _reply(ours_ms, f"reply {i}"),
            "peer": _reply(20.0, f"reply {i}" if i == 0 else "other"),
            "peer_fa_off": _reply(21.0, f"reply {i}"),
        }
        for i in range(3)
    ]
    figures = peer.summarize(rows)
    assert figures["identical_replies"] == {"peer": 1, "peer_fa_off": 3}
    assert figures["ratios"]["peer"]["prompt"] == 1.0

    section = "\n".join(peer.render({"rows": rows, "peer_build": "b1-test", **figures}))
    ratio = ours_ms / 20.0
    assert (
        f"- Target ours within 1.15× of llama-server (b) per generated token: measured "
        f"{ratio:.3f}, {verdict}; against (c) {ours_ms / 21.0:.3f}." in section
    )
    assert "Identical replies: 1/3 with (b), 3/3 with (c)." in section
    assert "build b1-test" in section


def test_peer_asks_for_the_llama_server_build_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(peer.llama_server, "binary", lambda: tmp_path / "llama-server")
    with pytest.raises(RuntimeError, match="run `make peer-llama-server`"):
        peer.run(lambda _: None)
    with pytest.raises(RuntimeError, match="run `make peer-llama-server`"):
        scale.run(lambda _: None)


def test_llama_server_args_leave_the_port_to_the_bench(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    exe = tmp_path / "llama-server"
    exe.touch()
    monkeypatch.setattr(peer.llama_server, "binary", lambda: exe)
    argv = peer.llama_server_args(slots=4)
    assert argv[0] == str(exe) and "--port" not in argv
    assert argv[argv.index("--parallel") + 1] == "4" and "--jinja" in argv
