"""``python -m lab sweep``: the task set under each preset, for each model, and its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.errors import EvalError
from evals.record import read_records
from evals.report.compare import compare
from evals.run.started import Started, served
from lab.studies.sweep import SweepSettings, best, pareto_front, rewrite, run_sweep


async def test_sweep_runs_every_preset_for_every_model(scripted_url: str, tmp_path: Path) -> None:
    written = await run_sweep(
        SweepSettings(
            presets=["no-helpers", "guarded"],
            models=["scripted:oracle", "scripted:duplicate"],
            base_url=scripted_url,
            out=tmp_path,
        ),
        echo=lambda _: None,
    )
    assert [p.name for p in written] == ["sweep.md", "sweep.json", "sweep.png", "sweep_pareto.png"]
    assert (tmp_path / "plots" / "sweep_pareto.png").read_bytes()[:4] == b"\x89PNG"
    data = json.loads((tmp_path / "sweep.json").read_text())
    rows = data["runs"]
    assert [(r["model"], r["preset"]) for r in rows] == [
        ("scripted:oracle", "no-helpers"),
        ("scripted:oracle", "guarded"),
        ("scripted:duplicate", "no-helpers"),
        ("scripted:duplicate", "guarded"),
    ]
    for row in rows:
        run_file = Path(row["run_file"])
        assert run_file.parent == tmp_path / "runs"
        assert (run_file.with_name(run_file.stem + ".runs") / "eval.json").exists()
        records = read_records(run_file)
        assert {r["spec"]["preset"]["name"] for r in records} == {row["preset"]}
    duplicate = {r["preset"]: r for r in rows if r["model"] == "scripted:duplicate"}
    # The guard answers the repeated read from the earlier result: one tool run less per task.
    assert (duplicate["no-helpers"]["tool_runs"], duplicate["guarded"]["tool_runs"]) == (18, 12)
    # Both solve every task in the same turns; guarded offers only the task's two tools, so
    # its requests are shorter.
    oracle = {r["preset"]: r for r in rows if r["model"] == "scripted:oracle"}
    assert oracle["no-helpers"]["turns"] == oracle["guarded"]["turns"]
    assert oracle["guarded"]["prompt_tokens"] < oracle["no-helpers"]["prompt_tokens"]
    assert data["best"]["scripted:oracle"] == "guarded"
    table = (tmp_path / "sweep.md").read_text()
    for label in ("accuracy", "pass^k", "p95 turn ms", "invalid calls", "guarded", "no-helpers"):
        assert label in table
    assert "**" + data["best"]["scripted:duplicate"] + "**" in table
    # The comparison of the sweep's runs names each run's preset.
    text = compare([tmp_path / "runs"])
    assert "| preset |" in text and "guarded" in text and "repeat_guard=answer" in text


def row(preset: str, accuracy: float, turns: int, tokens: int, wall_ms: float) -> dict[str, Any]:
    return {
        "preset": preset,
        "accuracy": accuracy,
        "turns": turns,
        "prompt_tokens": tokens,
        "completion_tokens": 0,
        "wall_ms": wall_ms,
    }


def test_best_is_the_most_accurate_then_fewest_turns_then_fewest_tokens() -> None:
    rows = [
        row("fast-wrong", 0.5, 6, 100, 10.0),
        row("right-many-turns", 0.83, 14, 500, 100.0),
        row("right-few-turns-many-tokens", 0.83, 12, 900, 900.0),
        row("right-few-turns-few-tokens", 0.83, 12, 800, 950.0),
    ]
    assert best(rows)["preset"] == "right-few-turns-few-tokens"


def test_the_pareto_front_keeps_only_rows_nothing_beats_on_both() -> None:
    rows = [
        {"model": "a", "preset": "slow-right", "accuracy": 0.8, "mean_turn_ms": 900.0},
        {"model": "a", "preset": "fast-wrong", "accuracy": 0.2, "mean_turn_ms": 100.0},
        {"model": "b", "preset": "beaten", "accuracy": 0.5, "mean_turn_ms": 950.0},
        {"model": "b", "preset": "middle", "accuracy": 0.5, "mean_turn_ms": 400.0},
        {"model": "b", "preset": "untimed", "accuracy": 1.0, "mean_turn_ms": None},
    ]
    front = [r["preset"] for r in pareto_front(rows)]
    assert front == ["fast-wrong", "middle", "slow-right"]


def test_wall_time_never_decides() -> None:
    """Two runs equal in every deterministic figure: the earlier row wins, whichever was faster
    on a shared machine."""
    first, second = row("named-first", 0.0, 8, 300, 900.0), row("faster", 0.0, 8, 300, 10.0)
    assert best([first, second])["preset"] == "named-first"
    assert best([second, first])["preset"] == "faster"


async def test_the_report_can_be_written_again_from_the_run_files(
    scripted_url: str, tmp_path: Path
) -> None:
    await run_sweep(
        SweepSettings(
            presets=["no-helpers", "focused"],
            models=["scripted:duplicate"],
            base_url=scripted_url,
            out=tmp_path / "first",
        ),
        echo=lambda _: None,
    )
    first = json.loads((tmp_path / "first" / "sweep.json").read_text())
    rewrite([Path(r["run_file"]) for r in first["runs"]], tmp_path / "again")
    again = json.loads((tmp_path / "again" / "sweep.json").read_text())
    assert again == first


def test_a_model_the_sweep_serves_is_up_in_the_block_and_stopped_after_it() -> None:
    said: list[str] = []
    with served("x", Started(backend="scripted"), said.append) as url:
        assert httpx.get(f"{url}/models", timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=5)
    assert (
        said[0].startswith("serving x on http://127.0.0.1:")
        and said[-1] == "stopped the server of x"
    )
    # A server that cannot start is an EvalError that says why.
    with (
        pytest.raises(EvalError, match=r"could not serve nope: .* exited; see "),
        served("nope", Started(backend="llama"), said.append),
    ):
        pass


def test_the_servers_a_command_starts_take_every_option_the_backends_declare() -> None:
    """The sweep's and the leaderboard's server flags are the backends' own options
    (``OPTIONS``): each is a flag of both, what is given reaches ``python -m serve_local``,
    and an option the chosen backend does not declare is refused, never dropped."""
    from lab.cli import parser
    from serve_local.backends.registry import declared

    declared_flags = {o.flag for opts in declared().values() for o in opts} - {"--model"}
    commands = next(a for a in parser()._subparsers._group_actions)  # type: ignore[union-attr]
    for name in ("sweep", "leaderboard"):
        taken = {s for a in commands.choices[name]._actions for s in a.option_strings}
        assert declared_flags <= taken, (name, declared_flags - taken)
    args = parser().parse_args(
        ["sweep", "--presets", "plain", "--models", "m", "--slots", "4", "--ctx", "8192"]
    )
    started = Started.from_args(args)
    assert started == Started("llama", {"slots": 4, "ctx": 8192}) and started.slots == 4
    with (
        pytest.raises(EvalError, match="the scripted backend takes no --ctx"),
        served("x", Started("scripted", {"ctx": 8192}), lambda _: None),
    ):
        pass
    with (
        pytest.raises(EvalError, match="decodes one request at a time"),
        served("x", Started("scripted", {"slots": 2}), lambda _: None),
    ):
        pass
