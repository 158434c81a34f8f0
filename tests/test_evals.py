"""The eval runner, scorers, task files and comparisons against the scripted provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals.errors import EvalError
from evals.record import RunRecord, kept_at, read_records, read_runs
from evals.report.compare import compare
from evals.report.summary import summarize, summarize_run_file
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop, resumed_settings
from evals.scoring import score
from evals.tasks import DEFAULT_TASKS, TaskFileError, load_tasks
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.setup import Setup
from harness.state import RunState, ToolRun, new_run
from harness.tools import default_tools
from harness.workspace import Workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from tests.fake_provider import answer, by_turn, calls, fake_client, server_app


def settings(url: str, tmp_path: Path, model: str, **extra: object) -> EvalSettings:
    extra.setdefault("out", tmp_path / f"{model}.jsonl")
    return EvalSettings(serving=Serving(base_url=url, model=model), **extra)  # type: ignore[arg-type]


async def test_oracle_scores_six_of_six(scripted_url: str, tmp_path: Path) -> None:
    lines: list[str] = []
    out = await run_eval(
        settings(scripted_url, tmp_path, "scripted:oracle"),
        echo=lines.append,
        summarize=summarize_run_file,
    )
    records = read_records(out)
    assert [r["task_id"] for r in records] == [t.id for t in load_tasks().tasks]
    assert all(r["correct"] for r in records)
    assert lines[-2].startswith("TOTAL turns=18  toolruns=24") and "correct=6/6" in lines[-2]
    summary = json.loads((tmp_path / "scripted:oracle.summary.json").read_text())
    assert (summary["correct"], summary["accuracy"], summary["pass_k"]) == (6, 1.0, 1.0)
    assert (tmp_path / "scripted:oracle.summary.md").read_text().count("✓") == 6
    first = records[0]
    for key in ["label", "model", "model_sha256", "backend", "base_url", "loop", "machine"]:
        assert key in first["spec"], key
    assert first["spec"]["task_set_hash"] == load_tasks().content_hash
    assert first["environment"] == {"name": "workspace"}
    for key in [
        "run_id",
        "question",
        "epoch",
        "status",
        "interruption",
        "turns",
        "tool_runs",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "wall_ms",
        "turn_latency_ms",
        "turn_timings",
        "mean_turn_ms",
        "p95_turn_ms",
        "harness_ms",
        "answer",
        "checks",
        "correct",
        "trace_path",
        "timestamp",
    ]:
        assert key in first, key
    assert first["spec"]["machine"]["cores"] == os.cpu_count()
    # Named relative to the run file: a run file and its folder move together.
    assert first["trace_path"] == f"{out.stem}.runs/{first['run_id']}.trace.jsonl"
    trace = kept_at(out, first["trace_path"])
    assert trace.parent == tmp_path / "scripted:oracle.runs"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[-1]["type"] == "run_stopped" and events[-1]["run_id"] == first["run_id"]
    saved = json.loads((trace.parent / f"{first['run_id']}.json").read_text())
    assert saved["answer"] == first["answer"]
    # Parallel calls overlap: their summed time may pass the wall clock; their wall time may not.
    assert first["wall_ms"] >= first["model_ms"] + first["tool_wall_ms"]


async def test_runaway_scores_zero_and_every_task_hits_the_cap(
    scripted_url: str, tmp_path: Path
) -> None:
    out = await run_eval(
        settings(scripted_url, tmp_path, "scripted:runaway", loop=eval_loop(max_turns=4)),
        echo=lambda _: None,
    )
    records = read_records(out)
    assert len(records) == 6
    assert {r["status"] for r in records} == {"max_turns_exceeded"}
    assert not any(r["correct"] for r in records)
    assert all(r["turns"] == 4 for r in records)


async def test_epochs_give_pass_k(scripted_url: str, tmp_path: Path) -> None:
    out = await run_eval(
        settings(scripted_url, tmp_path, "scripted:oracle", epochs=2), echo=lambda _: None
    )
    records = read_records(out)
    assert [r["epoch"] for r in records] == [1] * 6 + [2] * 6
    text = compare([out])
    assert "1.00 (k=2)" in text and "2/2" in text


async def test_server_not_running_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(EvalError) as caught:
        await run_eval(settings("http://127.0.0.1:9/v1", tmp_path, "m"), echo=lambda _: None)
    assert "http://127.0.0.1:9/v1" in str(caught.value) and "make serve-local" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_cli_without_a_server_exits_non_zero(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--out", str(tmp_path / "x.jsonl")],
        env={**os.environ, "LLM_BASE_URL": "http://127.0.0.1:9/v1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "LLM_BASE_URL" in done.stderr and "make serve-local" in done.stderr
    assert list(tmp_path.iterdir()) == []


class _Interrupted(Exception):
    pass


async def test_an_interrupted_eval_leaves_no_file_looking_complete(
    scripted_url: str, tmp_path: Path
) -> None:
    def interrupt(_: RunRecord) -> None:
        raise _Interrupted

    with pytest.raises(_Interrupted):
        await run_eval(
            settings(scripted_url, tmp_path, "scripted:oracle"),
            echo=lambda _: None,
            after_task=interrupt,
        )
    assert not (tmp_path / "scripted:oracle.jsonl").exists()
    partial = read_records(tmp_path / "scripted:oracle.jsonl.partial")
    assert [r["task_id"] for r in partial] == ["timeout"]


async def test_server_dying_between_tasks_marks_the_rest_not_run(tmp_path: Path) -> None:
    server = running_server(create_app(ScriptedBackend()))
    url = server.__enter__()
    stopped = [False]

    def stop_server(_: RunRecord) -> None:
        if not stopped[0]:
            stopped[0] = True
            server.__exit__(None, None, None)

    out = await run_eval(
        settings(url, tmp_path, "scripted:oracle"),
        echo=lambda _: None,
        after_task=stop_server,
        summarize=summarize_run_file,
    )
    records = read_records(out)
    # The task the server died under is an error, the rest never ran: none is an answer.
    assert [r["status"] for r in records] == ["completed", "error"] + ["not_run"] * 4
    assert records[0]["correct"] and not any(r["correct"] for r in records[1:])
    assert "cannot reach the model server" in records[1]["error"]
    assert all("not run" in r["error"] for r in records[2:])
    assert not (tmp_path / "scripted:oracle.jsonl.partial").exists()
    summary = summarize(read_runs(out))
    assert (summary["runs"], summary["correct"], summary["errors"]) == (1, 1, 5)
    total = out.with_suffix(".summary.md").read_text()
    assert "correct=1/1 = 100 %" in total and "errors=5 (rerun with --resume)" in total
    assert "| errors (not answers; rerun with --resume) | 5 |" in compare([out])
    # --resume runs the errors again and keeps the answer it had.
    with running_server(create_app(ScriptedBackend())) as again:
        await run_eval(resumed_settings(out, again), echo=lambda _: None)
    rerun = read_records(out)
    assert [r["status"] for r in rerun] == ["completed"] * 6 and all(r["correct"] for r in rerun)
    assert rerun[0] == records[0]


async def test_a_provider_429_after_its_retries_is_an_error_not_a_wrong_answer(
    scripted_url: str, tmp_path: Path
) -> None:
    """A 429 on every request: each task is an error, and no accuracy counts it."""
    out = await run_eval(
        settings(scripted_url, tmp_path, "scripted:oracle+429x999"), echo=lambda _: None
    )
    records = read_records(out)
    assert {r["status"] for r in records} == {"error"}
    assert all("gave up after" in r["error"] for r in records)
    summary = summarize(read_runs(out))
    assert (summary["runs"], summary["correct"], summary["errors"]) == (0, 0, 6)


@pytest.mark.parametrize(("status", "machinery"), [(500, True), (404, True), (400, False)])
async def test_which_provider_failures_are_the_machinerys(
    workspace: Workspace, status: int, machinery: bool
) -> None:
    """A 5xx or a 404 says nothing of the model; a 400 is the request the loop built."""
    body = {"error": {"message": "no", "type": "x", "param": None, "code": None}}
    state = new_run("fake", "Which file mentions a timeout?")
    async with fake_client(by_turn([(status, body)])) as client:
        await run_loop(state, client, Setup(default_tools(), workspace), LoopConfig())
    assert state.status == "failed" and state.provider_unavailable is machinery


LISTING = "access.log  93 bytes\nerrors.log  150 bytes\nnotes.txt  30 bytes"


def _state(answer: str, results: list[tuple[str, dict[str, str], str]] | None = None) -> RunState:
    """A finished run whose calls (tool, arguments, result text) all succeeded."""
    state = new_run("m", "q")
    state.status, state.answer = "completed", answer
    for i, (name, args, content) in enumerate(results or []):
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(args)}
        state.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        state.messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": content})
        state.tool_log.append(ToolRun(i + 1, f"c{i}", name, json.dumps(args), ok=True, ran=True))
    return state


def test_an_answer_naming_two_files_for_largest_is_wrong() -> None:
    largest = next(t for t in load_tasks().tasks if t.id == "largest")
    listed = [("list_files", {}, LISTING)]
    results = score(largest, _state("errors.log and access.log are the largest.", listed))
    assert not all(r["passed"] for r in results)
    assert all(r["passed"] for r in score(largest, _state("errors.log is the largest.", listed)))
    # The same answer from a run that never listed the files is a guess.
    assert not all(r["passed"] for r in score(largest, _state("errors.log is the largest.")))


def test_files_read_counts_only_successful_reads() -> None:
    read_all = next(t for t in load_tasks().tasks if t.id == "read_all")
    answer = "errors.log: worker 7 timed out; access.log: GET /health; notes.txt: rotate logs."
    reads = [
        ("list_files", {}, LISTING),
        ("read_file", {"path": "errors.log"}, "ERROR worker 7 timed out after 30000 ms"),
        ("read_file", {"path": "access.log"}, "10.0.0.4 GET /health 200"),
        ("read_file", {"path": "./notes.txt"}, "Remember to rotate your logs."),
    ]
    state = _state(answer, reads)
    assert all(r["passed"] for r in score(read_all, state))
    state.tool_log[2].ok = False
    assert not all(r["passed"] for r in score(read_all, state))


def test_read_all_needs_an_answer_that_reports_each_file() -> None:
    read_all = next(t for t in load_tasks().tasks if t.id == "read_all")
    reads = [("list_files", {}, LISTING)] + [
        ("read_file", {"path": name}, "text") for name in ("errors.log", "access.log", "notes.txt")
    ]
    assert not all(r["passed"] for r in score(read_all, _state("", reads)))
    assert not all(r["passed"] for r in score(read_all, _state("I read all three.", reads)))


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ('"kind": "answer"', '"kind": "answers"'),
        ('"type": "number"', '"type": "count"'),
        ('"expected": "notes.txt"', '"expected": "notes.md"'),
    ],
)
def test_unknown_check_kind_fails_with_its_line(tmp_path: Path, good: str, bad: str) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(DEFAULT_TASKS.read_text().replace(good, bad, 1))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if bad in text)
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path)
    assert f"line {line}" in str(caught.value), caught.value
    assert bad.split(": ")[1].strip('"') in str(caught.value)


def test_malformed_json_task_file_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.json"
    bad.write_text('{"name": "x",\n "tasks": [\n  {"id": "a",}\n]}')
    with pytest.raises(TaskFileError, match="line 3"):
        load_tasks(bad)


async def test_bad_task_file_fails_before_any_model_call(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.json"
    bad.write_text('{"name": "x", "tasks": []}')
    with pytest.raises(TaskFileError):
        await run_eval(
            EvalSettings(serving=Serving(base_url="http://127.0.0.1:9/v1"), tasks=bad),
            echo=lambda _: None,
        )


async def test_compare_writes_a_table_and_two_plots(scripted_url: str, tmp_path: Path) -> None:
    oracle = await run_eval(
        settings(scripted_url, tmp_path, "scripted:oracle"), echo=lambda _: None
    )
    runaway = await run_eval(
        settings(scripted_url, tmp_path, "scripted:runaway", loop=eval_loop(max_turns=2)),
        echo=lambda _: None,
    )
    text = compare([oracle, runaway], tmp_path / "summary.md", tmp_path / "plots")
    assert "| accuracy | 6/6 = 100 % (95 % CI 61–100 %) | 0/6 = 0 % (95 % CI 0–39 %) |" in text
    assert "| largest | ✓ 3t" in text
    for png in ["task_wall.png", "turn_latency.png"]:
        assert (tmp_path / "plots" / png).read_bytes()[:4] == b"\x89PNG"
    assert "![turn_latency](plots/turn_latency.png)" in (tmp_path / "summary.md").read_text()


async def test_eval_declines_calls_that_need_approval_and_goes_on(
    scripted_url: str, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text(
        json.dumps(
            {
                "name": "one",
                "tasks": [
                    {
                        "id": "free",
                        "question": "Free up some space in the workspace.",
                        "checks": [{"kind": "contains", "value": "did not delete"}],
                    }
                ],
            }
        )
    )
    out = await run_eval(
        settings(scripted_url, tmp_path, "scripted:destructive", tasks=tasks), echo=lambda _: None
    )
    (record,) = read_records(out)
    assert (record["status"], record["correct"]) == ("completed", True)
    assert record["answer"] == "I did not delete anything: you declined the deletion."
    stopped = await run_eval(
        settings(
            scripted_url,
            tmp_path,
            "scripted:destructive",
            tasks=tasks,
            approvals="stop",
            out=tmp_path / "stop.jsonl",
        ),
        echo=lambda _: None,
    )
    (record,) = read_records(stopped)
    assert record["status"] == "interrupted"
    assert record["interruption"]["tool_name"] == "delete_file"


async def test_paths_no_file_can_have_do_not_abort_the_eval(tmp_path: Path) -> None:
    """A model that sends a NUL byte or 5,000 characters as a path: each task still ends."""
    bad_reads = calls(
        ("r1", "read_file", json.dumps({"path": "errors\x00.log"})),
        ("r2", "read_file", json.dumps({"path": "x" * 5000})),
    )
    replies = by_turn([(200, bad_reads), (200, answer("I could not read anything."))])
    app = server_app(replies, "broken")
    with running_server(app) as url:  # type: ignore[arg-type]
        out = await run_eval(settings(url, tmp_path, "broken"), echo=lambda _: None)
    records = read_records(out)
    assert len(records) == len(load_tasks().tasks)
    assert all((r["status"], r["turns"], r["tool_runs"]) == ("completed", 2, 2) for r in records)
    assert all(r["tool_bugs"] == [] for r in records)  # refused, not crashed


def test_calls_left_as_text_are_counted() -> None:
    from evals.run.recorder import call_shaped_text
    from harness.state import new_run

    state = new_run("m", "How many files are there?")
    state.messages += [
        {"role": "assistant", "content": '{"name": "list_files", "arguments": {"type": "object"}}'},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "assistant", "content": 'Done. {"name": "rm_rf"} {"name": "read_file"}'},
        # submit is offered to a run too; a call written with its name second is still one
        {"role": "assistant", "content": '{"arguments": {"answer": "3"}, "name": "submit"}'},
        {"role": "assistant", "content": "There are three files."},
    ]
    assert call_shaped_text(state) == 3


def test_cli_policy_flags_are_recorded_in_every_record(scripted_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "evals",
            "run",
            "--base-url",
            scripted_url,
            "--model",
            "scripted:oracle",
            "--preset",
            "focused",
            "--parallel-tool-calls",
            "on",
            "--tool-choice",
            "auto",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    records = read_records(out)
    assert len(records) == 6
    for record in records:
        policy = record["spec"]["preset"]
        assert policy["name"] == "focused+tool_choice,parallel_tool_calls"
        assert policy["settings"]["tools"] == "task"
        assert (policy["settings"]["tool_choice"], policy["settings"]["parallel_tool_calls"]) == (
            "auto",
            True,
        )
    table = compare([out])
    assert "focused+tool_choice,parallel_tool_calls" in table and "tools=task" in table
    unknown = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--base-url", scripted_url, "--policy", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 1 and "no preset 'x'" in unknown.stderr  # --policy: its alias


def test_every_flagged_loop_field_is_a_flag_of_each_command_and_kept_where_the_eval_keeps_it(
    scripted_url: str, tmp_path: Path
) -> None:
    """A loop limit is its field in ``LoopConfig`` with its flag: every command that runs the
    loop takes the flag, every record keeps the value under the field's name in
    ``spec.loop``, and eval.json keeps it for a resume."""
    import argparse

    from evals.cli import parser
    from harness.cli import _parser as harness_parser
    from harness.config import FLAGGED, flagged
    from lab.cli import parser as lab_parser

    commands = next(a for a in parser()._subparsers._group_actions)  # type: ignore[union-attr]
    run = next(a for a in harness_parser()._subparsers._group_actions)  # type: ignore[union-attr]
    lab = next(a for a in lab_parser()._subparsers._group_actions)  # type: ignore[union-attr]
    takers = {n: commands.choices[n] for n in ("run", "tau2")}
    takers |= {n: lab.choices[n] for n in ("sweep", "leaderboard")}
    takers["harness run"] = run.choices["run"]
    for name, command in takers.items():
        dests = {a.dest for a in command._actions if isinstance(a, argparse.Action)}
        assert set(FLAGGED) <= dests, (name, set(FLAGGED) - dests)
    out = tmp_path / "run.jsonl"
    ran = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--base-url", scripted_url, "--model",
         "scripted:oracle", "--out", str(out), "--budget", "5", "--max-tokens", "90000",
         "--task-timeout", "60", "--tool-errors", "generic", "--max-turns", "7"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    want = flagged(
        eval_loop(
            max_turns=7, max_budget_usd=5.0, max_total_tokens=90000, timeout_s=60.0,
            tool_errors="generic",
        )
    )  # fmt: skip
    for record in read_records(out):
        assert {k: record["spec"]["loop"][k] for k in FLAGGED} == want
    saved = json.loads((out.with_suffix(".runs") / "eval.json").read_text())
    assert saved["loop"] == want
