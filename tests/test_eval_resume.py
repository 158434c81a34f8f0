"""An interrupted eval keeps every finished task, and ``--resume`` runs only what is missing;
``--task-timeout`` stops one task and the eval goes on. Real processes, really killed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.errors import EvalError
from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop, resumed_settings
from evals.tasks import load_tasks
from harness.presets import preset
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from tests.helpers import ROOT

TASK_IDS = [t.id for t in load_tasks().tasks]


def evals(
    *args: str, url: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evals", "run", "--base-url", url, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal sends it: a suite started in the background of a shell without
        # job control inherits SIGINT ignored, and Python would keep ignoring it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.fixture(scope="module")
def slow_url() -> Iterator[str]:
    with running_server(create_app(ScriptedBackend(latency_ms=150))) as url:
        yield url


def test_a_killed_eval_keeps_its_finished_tasks_and_resume_runs_the_rest(
    scripted_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "oracle.jsonl"
    killed = evals(
        "--model",
        "scripted:oracle",
        "--policy",
        "focused",
        "--out",
        str(out),
        url=scripted_url,
        cwd=tmp_path,
        env={"LOOPBENCH_CRASH_AFTER_TASK": "3"},
    )
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    partial = out.with_name(out.name + ".partial")
    kept = read_records(partial)
    assert [r["task_id"] for r in kept] == TASK_IDS[:3] and not out.exists()

    resumed = evals("--resume", str(partial), url=scripted_url, cwd=tmp_path)
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert "3 of 6 kept" in stdout
    ran = [line.split()[0] for line in stdout.splitlines() if line.startswith("[")]
    assert ran == ["[4/6]", "[5/6]", "[6/6]"]
    records = read_records(out)
    assert [r["task_id"] for r in records] == TASK_IDS
    assert records[:3] == kept  # the finished tasks as they were, not run again
    assert all(r["correct"] for r in records)
    assert {r["spec"]["preset"]["name"] for r in records} == {"focused"}
    assert not partial.exists()
    # Every task's state file is there, the resumed ones under the same eval id.
    states = sorted(p.name for p in (tmp_path / "oracle.runs").glob("*-e1.json"))
    assert len(states) == 6 and len({name.split("-")[0] for name in states}) == 1


def _finished_tasks(partial: Path) -> int:
    """Complete records in the partial file (one may be half written as we look)."""
    if not partial.exists():
        return 0
    return partial.read_text(encoding="utf-8").count("\n")


def test_ctrl_c_keeps_the_finished_tasks(slow_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    partial = out.with_name(out.name + ".partial")
    proc = evals("--model", "scripted:oracle", "--out", str(out), url=slow_url, cwd=tmp_path)
    # Wait until the first task's record is on disk, then press Ctrl-C.
    while not _finished_tasks(partial):
        assert proc.poll() is None, proc.communicate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    kept = read_records(partial)
    assert 1 <= len(kept) < 6 and [r["task_id"] for r in kept] == TASK_IDS[: len(kept)]
    resumed = evals("--resume", str(partial), url=slow_url, cwd=tmp_path)
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert [r["task_id"] for r in read_records(out)] == TASK_IDS
    assert sum(line.startswith("[") for line in stdout.splitlines()) == 6 - len(kept)


async def test_task_timeout_stops_one_task_and_the_eval_goes_on(
    scripted_url: str, tmp_path: Path
) -> None:
    tasks = tmp_path / "two.json"
    check = [{"kind": "status", "value": "completed"}]
    tasks.write_text(
        json.dumps(
            {
                "name": "two",
                "tasks": [
                    {"id": "scan", "question": "Scan the archive.", "checks": check},
                    {"id": "again", "question": "Scan it again.", "checks": check},
                ],
            }
        )
    )
    out = await run_eval(
        EvalSettings(
            serving=Serving(base_url=scripted_url, model="scripted:slow"),
            tasks=tasks,
            out=tmp_path / "slow.jsonl",
            loop=eval_loop(timeout_s=0.3),
        ),
        echo=lambda _: None,
    )
    records = read_records(out)
    assert [r["status"] for r in records] == ["interrupted", "interrupted"]
    assert all(r["interruption"]["type"] == "timeout" for r in records)
    assert all(r["wall_ms"] < 3000 for r in records)  # the 3 s scan never finished
    assert records[0]["spec"]["loop"]["timeout_s"] == 0.3


def test_a_task_killed_in_flight_starts_a_trace_of_its_own_on_resume(
    scripted_url: str, tmp_path: Path
) -> None:
    """The killed attempt's trace and state are kept as ``RUN_ID.attempt-1.*``; the next
    attempt's trace opens with an ``attempt`` event and holds only its own run."""
    out = tmp_path / "oracle.jsonl"
    killed = evals(
        "--model",
        "scripted:oracle",
        "--out",
        str(out),
        url=scripted_url,
        cwd=tmp_path,
        env={"LOOPBENCH_CRASH_AFTER_TOOL": "read_file"},
    )
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    runs = tmp_path / "oracle.runs"
    before = {p.name: p.read_text() for p in runs.glob("*.trace.jsonl")}
    resumed = evals(
        "--resume", str(out.with_name(out.name + ".partial")), url=scripted_url, cwd=tmp_path
    )
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    (attempt,) = runs.glob("*.attempt-1.trace.jsonl")
    run_id = attempt.name.removesuffix(".attempt-1.trace.jsonl")
    assert attempt.read_text() == before[f"{run_id}.trace.jsonl"]  # the killed attempt, whole
    assert (runs / f"{run_id}.attempt-1.json").exists()
    events = [
        json.loads(line) for line in (runs / f"{run_id}.trace.jsonl").read_text().splitlines()
    ]
    assert (events[0]["type"], events[0]["attempt"]) == ("attempt", 2)
    record = next(r for r in read_records(out) if r["run_id"] == run_id)
    assert sum(e["type"] == "turn" for e in events) == record["turns"]  # its own turns only
    assert record["correct"]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("model_sha256", "abc123", "weights (sha256) 'abc123', and this run would use none"),
        ("tool_grammar", "off", "tool grammar 'off', and this run would use none"),
        ("draft", "prompt-lookup", "draft 'prompt-lookup', and this run would use none"),
        ("preset", None, "preset 'focused' (nudges=5), and this run would use 'focused'"),
    ],
)
async def test_resume_refuses_records_made_with_another_setup(
    scripted_url: str, tmp_path: Path, field: str, value: object, said: str
) -> None:
    out = await run_eval(
        EvalSettings(
            serving=Serving(scripted_url, model="scripted:oracle"),
            out=tmp_path / "run.jsonl",
            preset=preset("focused"),
        ),
        echo=lambda _: None,
    )  # fmt: skip
    kept = read_records(out)[:3]
    if field == "preset":
        kept[0]["spec"]["preset"]["settings"]["nudges"] = 5
    else:
        kept[0]["spec"][field] = value
    partial = out.with_name(out.name + ".partial")
    partial.write_text("".join(json.dumps(r) + "\n" for r in kept))
    out.unlink()
    with pytest.raises(
        EvalError, match=re.escape(f"cannot resume run.jsonl: its records were made with {said}")
    ):
        await run_eval(resumed_settings(partial, scripted_url), echo=lambda _: None)
    assert partial.read_text().count("\n") == 3  # nothing lost


@pytest.mark.parametrize(
    ("saved", "why"),
    [
        ("{not json", "missing or unreadable"),
        ('["a list"]', "a JSON object was expected"),
        ('{"tasks": "evals/tasks/files6.json", "eval_id": "1"}', "no 'preset'"),
        (
            '{"tasks": "t.json", "preset": {"name": "p", "settings": {}}, "loop": {"turns": 3}}',
            "loop: no field turns",
        ),
        (
            '{"tasks": "t.json", "policy": {"name": "plain", "settings": 3}}',
            "not an eval's settings",
        ),
    ],
)
def test_a_malformed_eval_json_is_named_on_resume(tmp_path: Path, saved: str, why: str) -> None:
    from evals.errors import EvalError
    from evals.record import task_folder

    partial = tmp_path / "run.jsonl.partial"
    partial.write_text("")
    keep = task_folder(tmp_path / "run.jsonl")
    keep.mkdir(parents=True)
    (keep / "eval.json").write_text(saved)
    with pytest.raises(EvalError) as caught:
        resumed_settings(partial, "http://127.0.0.1:9/v1")
    assert str(keep / "eval.json") in str(caught.value) and why in str(caught.value)


def test_an_eval_saved_before_the_loop_was_one_group_resumes_with_its_loop(
    tmp_path: Path,
) -> None:
    """An eval.json written before the loop's settings were one group kept them beside the
    eval's own under older names (``budget_usd``, ``task_timeout_s``) and its preset as
    ``policy``: a resume reads them by today's names. A committed one, its limits set."""
    from evals.record import task_folder

    committed = ROOT / "results" / "mcp" / "files6-ours-penalized.runs" / "eval.json"
    saved = json.loads(committed.read_text())
    assert "loop" not in saved and "policy" in saved and "budget_usd" in saved
    saved.update(budget_usd=0.25, task_timeout_s=30.0, temperature=0.5, seed=3)
    keep = task_folder(tmp_path / "run.jsonl")
    keep.mkdir(parents=True)
    (keep / "eval.json").write_text(json.dumps(saved))
    (tmp_path / "run.jsonl.partial").write_text("")
    resumed = resumed_settings(tmp_path / "run.jsonl.partial", "http://127.0.0.1:9/v1")
    assert resumed.preset.name == "penalized"
    assert resumed.preset.settings == saved["policy"]["settings"]
    loop = resumed.loop
    assert (loop.max_turns, loop.max_budget_usd, loop.timeout_s) == (10, 0.25, 30.0)
    assert (loop.temperature, loop.seed, loop.tool_errors) == (0.5, 3, "descriptive")
    assert resumed.epoch_seed(2) == 4


def test_a_saved_eval_keeps_its_loop_under_the_loops_own_names(tmp_path: Path) -> None:
    from evals.record import task_folder
    from evals.run.settings import eval_id
    from harness.config import flagged

    loop = eval_loop(max_budget_usd=1.5, max_total_tokens=900, temperature=0.3, seed=5)
    settings = EvalSettings(serving=Serving("http://127.0.0.1:9/v1"), loop=loop)
    keep = task_folder(tmp_path / "run.jsonl")
    eval_id(keep, settings)
    saved = json.loads((keep / "eval.json").read_text())
    assert saved["loop"] == flagged(loop) and saved["loop"]["max_total_tokens"] == 900
    assert saved["preset"]["name"] == "no-helpers" and "policy" not in saved
    (tmp_path / "run.jsonl.partial").write_text("")
    resumed = resumed_settings(tmp_path / "run.jsonl.partial", "http://127.0.0.1:9/v1")
    assert flagged(resumed.loop) == flagged(loop)
