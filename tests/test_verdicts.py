"""Verdicts: what a check must refuse. Scorer adversaries through the real loop and runner, a
shotgun answer built from every task file's own checks, failures that stay failures, and
rescoring of recorded runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.scoring import files_read, received, score, stated
from evals.scoring.verdict import passed, verdict_of
from evals.tasks import DEFAULT_TASKS, Contains, ContainsAny, Regex, Task, load_tasks
from harness.approvals import reject
from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.errors import ToolError
from harness.loop import run_loop
from harness.presets import PLAIN, preset, presets
from harness.setup import Setup
from harness.state import RunState, ToolRun, new_run
from harness.tools import ToolContext, default_tools, read_file
from harness.trace import Recorder
from harness.workspace import Workspace, create_workspace
from lab.report.rescore import RescoreError, rescore
from lab.studies.adversaries import run_adversaries, weak, write
from serve_local.scenarios import ADVERSARIES
from tests.fake_provider import answer, by_turn, calls, fake_client
from tests.helpers import LAB, LAB_ENV, ROOT

TASK_FILES = sorted(DEFAULT_TASKS.parent.glob("*.json"))


async def run_files6(url: str, model: str, policy: str, out: Path) -> list[dict[str, Any]]:
    settings = EvalSettings(
        serving=Serving(base_url=url, model=model, concurrency=6),
        preset=preset(policy),
        out=out,
        loop=eval_loop(max_turns=8),
    )
    return read_records(await run_eval(settings, echo=lambda _: None))


async def test_every_adversary_scores_zero_and_the_oracle_all_under_every_preset(
    scripted_url: str, tmp_path: Path
) -> None:
    cells = await run_adversaries(DEFAULT_TASKS, scripted_url, echo=lambda _: None)
    assert {c.scenario for c in cells} == {"oracle", *ADVERSARIES}
    assert {c.column for c in cells} == set(presets())
    assert all(c.runs == 6 for c in cells)
    credited = {(c.scenario, c.column): c.credited for c in cells if c.scenario != "oracle"}
    assert {k: v for k, v in credited.items() if v} == {}
    missed = {c.column: c.correct for c in cells if c.scenario == "oracle" and c.correct < 6}
    assert missed == {}
    md, _ = write(cells, DEFAULT_TASKS, tmp_path)
    assert md.name == "adversaries-files6.md"
    assert "No adversary is credited with any task" in md.read_text()


async def test_a_weak_check_shows_up_as_a_credited_adversary(
    scripted_url: str, tmp_path: Path
) -> None:
    """files6 as it was scored before grounding: answer checks alone."""
    data = json.loads(DEFAULT_TASKS.read_text())
    for task in data["tasks"]:
        task["checks"] = [c for c in task["checks"] if c["kind"] not in ("observed", "files_read")]
    weak_tasks = tmp_path / "weak.json"
    weak_tasks.write_text(json.dumps({**data, "name": "weak"}))
    cells = await run_adversaries(weak_tasks, scripted_url, lambda _: None, [PLAIN])
    found = weak(cells)
    assert "adversary-shotgun" in found["count"] and "adversary-guess" in found["timeout"]
    md, _ = write(cells, weak_tasks, tmp_path)
    assert "Weak checks: " in md.read_text()


def shotgun(task: Task) -> str:
    """Every string any answer check of ``task`` looks for, and every file name, in one answer."""
    words: list[str] = ["errors.log", "access.log", "notes.txt", "3", "three"]
    for check in task.checks:
        if isinstance(check, Contains):
            words.append(check.value)
        elif isinstance(check, ContainsAny):
            words += check.values
        elif isinstance(check, Regex):
            # The literal alternatives of a pattern such as \b(3|three)\b.
            words += re.findall(r"[A-Za-z0-9._/ -]{2,}", check.pattern.replace("\\b", " "))
    return " ".join(words)


@pytest.mark.parametrize("path", TASK_FILES, ids=[p.stem for p in TASK_FILES])
def test_no_task_passes_a_shotgun_answer_without_a_tool_result(path: Path) -> None:
    for task in load_tasks(path).tasks:
        state = new_run("adversary", task.question)
        state.status = "completed"
        state.answer = shotgun(task)
        checks = score(task, state)
        assert not all(c["passed"] for c in checks), f"{path.name}: {task.id} credits {checks}"
        # The answer checks do pass: only the missing evidence refuses it.
        answer_kinds = {"contains", "contains_any", "regex"}
        assert all(c["passed"] for c in checks if c["kind"] in answer_kinds), (task.id, checks)


@pytest.mark.parametrize("path", TASK_FILES, ids=[p.stem for p in TASK_FILES])
def test_every_shipped_task_is_grounded(path: Path) -> None:
    ungrounded = [t.id for t in load_tasks(path).tasks if not t.grounded]
    assert ungrounded == []


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        ('{"name": "read_file", "arguments": {"path": "errors.log"}}', ""),
        ('{{"name": "read_file", "arguments": {"path": "notes.txt"}}}}', ""),
        ('<tool_call>\n{"name": "list_files", "arguments": {}}\n</tool_call>', ""),
        ('```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```', ""),
        ('{"name": "read_file", "arguments": {"path": "errors.log"', ""),
        ('[{"name": "list_files", "arguments": {}}]', ""),
        ('errors.log. {"name": "submit", "arguments": {"answer": "x"}}', "errors.log."),
        ('The config says {"name": "Alice"}.', 'The config says {"name": "Alice"}.'),
        # A call of a made-up tool, with its arguments, is a call too.
        ('{"name": "memo.log", "arguments": {}}\n{"name": "a.txt", "arguments": {}}', ""),
        ("<tool_response>\nmemo.log  110 bytes\n</tool_response>", ""),
        ("Yes. <tool_response>\nmemo.log  110 bytes", "Yes."),
        ('memo.log is there. {"name": "memo.log", "arguments":', "memo.log is there."),
        ("errors.log mentions a timeout.", "errors.log mentions a timeout."),
    ],
)
def test_a_call_written_as_text_is_not_part_of_the_answer(answer: str, kept: str) -> None:
    assert stated(answer) == kept


# -- failure stays failure, through the real loop ------------------------------------------


async def loop(url: str, scenario: str, tmp: Path, **config: Any) -> tuple[RunState, Workspace]:
    state = new_run(f"scripted:{scenario}", "Which file mentions a timeout?")
    workspace = create_workspace(tmp / "ws")
    recorder = Recorder(state_dir=tmp / "state")
    async with ProviderClient(url) as client:
        await run_loop(
            state, client, Setup(default_tools(), workspace), LoopConfig.of(**config), recorder
        )
    return state, workspace


async def test_a_repeat_of_a_refused_read_stays_refused(scripted_url: str, tmp_path: Path) -> None:
    state, _ = await loop(scripted_url, "adversary-wrong-paths", tmp_path, repeat_guard="note")
    first, repeat = state.tool_log[0], state.tool_log[1]
    assert first.arguments == repeat.arguments and repeat.cached and not repeat.ran
    assert not first.ok and not repeat.ok
    assert "outside the workspace" in (repeat.error or "")
    assert files_read(state) == set() and received(state) == []
    # The model still reads the earlier refusal, with the note that it repeated itself.
    answer = next(m for m in state.messages if m.get("tool_call_id") == repeat.call_id)
    assert "outside the workspace" in answer["content"] and answer.get("is_error") is True


async def test_a_declined_call_is_not_ok(scripted_url: str, tmp_path: Path) -> None:
    state, workspace = await loop(scripted_url, "destructive", tmp_path)
    assert state.interruption and state.interruption["type"] == "approval"
    reject(state, state.interruption["call_id"], "keep it")
    async with ProviderClient(scripted_url) as client:
        recorder = Recorder(state_dir=tmp_path / "state")
        await run_loop(state, client, Setup(default_tools(), workspace), LoopConfig(), recorder)
    (declined,) = [r for r in state.tool_log if r.name == "delete_file"]
    assert not declined.ok and not declined.ran and "declined" in (declined.error or "")
    assert [r.name for r in received(state)] == ["list_files"]
    assert (workspace.root / "access.log").exists()


async def test_files_read_counts_only_reads_that_returned_content(
    scripted_url: str, tmp_path: Path
) -> None:
    state, _ = await loop(scripted_url, "recover", tmp_path, tool_errors="descriptive")
    assert [(r.name, r.ok) for r in state.tool_log] == [
        ("read_file", False),
        ("list_files", True),
        ("read_file", True),
    ]
    assert files_read(state) == {"errors.log"}


def test_a_copy_of_a_failure_recorded_as_ok_is_still_no_evidence() -> None:
    """Runs recorded before the loop marked copies of failures: the transcript decides."""
    state = new_run("m", "q")
    refusal = "refused: '../errors.log' is outside the workspace."
    for turn, cached in ((1, False), (2, True)):
        call_id = f"c{turn}"
        call = {"id": call_id, "type": "function", "function": {"name": "read_file"}}
        call["function"]["arguments"] = '{"path": "../errors.log"}'
        state.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        state.messages.append({"role": "tool", "tool_call_id": call_id, "content": refusal})
        state.tool_log.append(
            ToolRun(
                turn, call_id, "read_file", '{"path": "../errors.log"}', ok=cached, ran=not cached,
                error=None if cached else refusal, cached=cached,
            )
        )  # fmt: skip
    assert received(state) == []


async def test_a_successful_retry_is_evidence_after_an_identical_call_failed(
    workspace: Workspace,
) -> None:
    """The real loop, repeat guard off: the first read of errors.log times out, the same call
    again succeeds, and the answer from it is scored right."""
    attempts: list[str] = []

    async def flaky_read(args: dict[str, Any], ctx: ToolContext) -> str:
        attempts.append(args["path"])
        if len(attempts) == 1:
            raise ToolError("the read timed out; try again")
        return await read_file(args, ctx)

    tools = [replace(t, fn=flaky_read) if t.name == "read_file" else t for t in default_tools()]
    read = ("read_file", json.dumps({"path": "errors.log"}))
    replies = by_turn(
        [
            (200, calls(("c1", *read))),
            (200, calls(("c2", *read))),
            (200, answer("errors.log mentions a timeout: worker 7 timed out.")),
        ]
    )
    state = new_run("fake", "Which file mentions a timeout?")
    async with fake_client(replies) as client:
        await run_loop(state, client, Setup(tools, workspace), LoopConfig.of(repeat_guard="off"))
    assert [(r.ok, r.ran, r.cached) for r in state.tool_log] == [
        (False, True, False),
        (True, True, False),
    ]
    assert [r.content for r in received(state)] == [(workspace.root / "errors.log").read_text()]
    timeout = next(t for t in load_tasks().tasks if t.id == "timeout")
    assert all(r["passed"] for r in score(timeout, state)), score(timeout, state)


# -- rescoring -----------------------------------------------------------------------------


def stricter(tmp_path: Path) -> Path:
    """files6 where ``count`` also asks for "four files", which the oracle's answer does not say."""
    data = json.loads(DEFAULT_TASKS.read_text())
    for task in data["tasks"]:
        if task["id"] == "count":
            task["checks"].append({"kind": "contains", "value": "four files"})
    path = tmp_path / "files6.json"
    path.write_text(json.dumps(data))
    return path


async def test_rescore_applies_todays_checks_and_reports_before_and_after(
    scripted_url: str, tmp_path: Path
) -> None:
    records = await run_files6(scripted_url, "scripted:oracle", PLAIN, tmp_path / "run.jsonl")
    assert sum(r["correct"] for r in records) == 6
    missing = tmp_path / "run.runs" / f"{records[0]['run_id']}.json"
    missing.unlink()  # the first task (timeout) can no longer be rescored
    command = [*LAB, "rescore", "run.jsonl"]
    proc = subprocess.run(
        [*command, "--tasks", str(stricter(tmp_path)), "--report", "rescore.md"],
        cwd=tmp_path,
        env=LAB_ENV,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "run.jsonl: 6/6 -> 5/6  (count e1: ✓ -> ✗)" in proc.stdout
    assert "no state file, verdict kept: timeout" in proc.stdout
    after = {r["task_id"]: r for r in read_records(tmp_path / "run.jsonl")}
    assert not after["count"]["correct"] and after["count"]["rescored"]["first_verdict"] is True
    assert after["timeout"]["correct"] and after["timeout"]["rescored"] is None
    summary = json.loads((tmp_path / "run.summary.json").read_text())
    assert summary["correct"] == 5
    assert "correct=5/6" in (tmp_path / "run.summary.md").read_text()
    report = (tmp_path / "rescore.md").read_text()
    assert "| `run.jsonl` | 6/6 | 5/6 | count e1: ✓ -> ✗ | timeout |" in report


async def test_rescoring_twice_keeps_the_first_verdict(scripted_url: str, tmp_path: Path) -> None:
    await run_files6(scripted_url, "scripted:oracle", PLAIN, tmp_path / "run.jsonl")
    strict = stricter(tmp_path)
    (first,) = rescore([tmp_path / "run.jsonl"], strict)
    once = (tmp_path / "run.jsonl").read_bytes()
    (second,) = rescore([tmp_path / "run.jsonl"], strict)
    assert (tmp_path / "run.jsonl").read_bytes() == once  # nothing changed, nothing rewritten
    assert (first.before, first.after, second.before, second.after) == (6, 5, 5, 5)
    count = next(r for r in read_records(tmp_path / "run.jsonl") if r["task_id"] == "count")
    assert count["rescored"]["first_verdict"] is True


def test_rescore_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*LAB, "rescore", str(tmp_path / "nowhere.jsonl")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 1 and "nowhere.jsonl: no such run file or folder" in proc.stderr
    shutil.copy(DEFAULT_TASKS, tmp_path / "x.jsonl")
    proc = subprocess.run(
        [*LAB, "rescore", str(tmp_path / "x.jsonl")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 1 and "x.jsonl" in proc.stderr


async def test_rescore_refuses_a_task_asked_differently_and_records_the_checks_it_used(
    scripted_url: str, tmp_path: Path
) -> None:
    records = await run_files6(scripted_url, "scripted:oracle", PLAIN, tmp_path / "run.jsonl")
    tasks = {t.id: t for t in load_tasks().tasks}
    assert all(r["task_hash"] == tasks[r["task_id"]].task_hash for r in records)
    assert all(r["checks_hash"] == tasks[r["task_id"]].checks_hash for r in records)
    strict = stricter(tmp_path)
    rescore([tmp_path / "run.jsonl"], strict)
    count = next(r for r in read_records(tmp_path / "run.jsonl") if r["task_id"] == "count")
    stricter_count = next(t for t in load_tasks(strict).tasks if t.id == "count")
    assert count["checks_hash"] == stricter_count.checks_hash != tasks["count"].checks_hash
    assert count["task_hash"] == tasks["count"].task_hash  # the same question was asked
    reworded = json.loads(DEFAULT_TASKS.read_text())
    reworded["tasks"][1]["question"] = "How many files does the folder hold?"
    (tmp_path / "reworded.json").write_text(json.dumps(reworded))
    with pytest.raises(RescoreError, match=r"task 'count' is not the one this run was asked"):
        rescore([tmp_path / "run.jsonl"], tmp_path / "reworded.json")


async def test_under_a_workflow_an_adversary_is_credited_only_where_its_words_are_right(
    scripted_url: str,
) -> None:
    """A workflow's code lists and reads every file, so its evidence checks pass whatever the
    model says: only the answer check stands between an adversary and credit. Each adversary
    is credited exactly where its fixed words (written knowing files6) are the right answer, and
    the closing note and docs/workflows.md give that floor beside every workflow's score."""
    solvers = ["chain", "route", "vote", "evaluate-optimize"]
    cells = await run_adversaries(DEFAULT_TASKS, scripted_url, lambda _: None, [], None, solvers)
    credited = {(c.scenario, c.column): set(c.credited) for c in cells if c.scenario != "oracle"}
    right = {
        "adversary-guess": {"timeout", "largest"},  # "errors.log"
        "adversary-shotgun": {"count"},  # "There are 3 files: ..."
        "adversary-wrong-file": {"count"},
        "adversary-wrong-paths": {"notes"},  # "... notes.txt, which says to rotate the logs"
    }
    for solver in solvers:
        found = {s: ids for (s, p), ids in credited.items() if p == solver and ids}
        assert found == right, solver


# -- evidence by what a tool result means --------------------------------------------------


def _yes_no_task(kind: str) -> Task:
    """The first task of ``kind`` (exists, missing) of the committed generated test set."""
    return next(
        t for t in load_tasks("evals/tasks/gen-test-s1000-n60.json").tasks if t.kind == kind
    )


async def _read_then_answer(task: Task, path: str, words: str, tmp_path: Path) -> RunState:
    """The real loop over the task's files: one read of ``path``, then ``words``."""
    workspace = create_workspace(tmp_path / "ws", files=task.workspace)
    replies = by_turn(
        [
            (200, calls(("c1", "read_file", json.dumps({"path": path})))),
            (200, answer(words)),
        ]
    )
    state = new_run("fake", task.question)
    async with fake_client(replies) as client:
        await run_loop(state, client, Setup(default_tools(), workspace), LoopConfig())
    return state


@pytest.mark.parametrize(
    ("path", "credited"),
    [
        ("{name}", True),  # the tool's own "no such file": the file is not there
        ("./{name}", True),
        ("nested/{name}", False),  # no such file in a folder that is not the task's
        ("../{name}", False),  # refused before the tool ran: shows nothing
    ],
)
async def test_a_read_that_finds_no_such_file_is_evidence_of_absence(
    path: str, credited: bool, tmp_path: Path
) -> None:
    task = _yes_no_task("missing")
    name = task.answer.subject if task.answer is not None else ""  # type: ignore[union-attr]
    state = await _read_then_answer(
        task, path.format(name=name), f"No, there is no file named {name}.", tmp_path
    )
    assert [(r.name, r.ok) for r in state.tool_log] == [("read_file", False)]
    checks = score(task, state)
    assert [c["passed"] for c in checks if c["kind"] == "answer"] == [True]
    assert all(c["passed"] for c in checks) is credited, checks


async def test_a_read_that_returns_the_file_is_evidence_that_it_is_there(tmp_path: Path) -> None:
    task = _yes_no_task("exists")
    name = task.answer.subject if task.answer is not None else ""  # type: ignore[union-attr]
    state = await _read_then_answer(task, name, f"Yes, {name} is there.", tmp_path)
    assert [(r.name, r.ok) for r in state.tool_log] == [("read_file", True)]
    assert all(c["passed"] for c in score(task, state)), score(task, state)
    # The same words after a read of another file: nothing shows the file is there.
    other = next(f for f in task.workspace or {} if f != name)
    state = await _read_then_answer(task, other, f"Yes, {name} is there.", tmp_path / "2")
    assert not all(c["passed"] for c in score(task, state))


def test_a_run_is_right_by_one_rule_everywhere() -> None:
    """Judged by at least one check, every one passed: the runner's record, rescore and the
    strategies read it from evals.scoring.verdict, so a run never judged is never right."""
    assert not passed([]) and not passed(None)
    assert passed([{"passed": True}]) and not passed([{"passed": True}, {"passed": False}])
    task = next(t for t in load_tasks().tasks if t.id == "count")
    state = new_run("m", task.question)
    state.status, state.answer = "completed", "There are 3 files."
    verdict = verdict_of(task, state)
    assert [c["kind"] for c in verdict.checks] == [c.kind for c in task.checks]
    assert not verdict.correct  # right words, but no listing received
    assert verdict.checks_hash == task.checks_hash and verdict.false_claims == []


def test_only_a_read_of_the_file_in_the_tasks_folder_by_the_tool_itself_shows_it_missing() -> None:
    from evals.scoring.evidence import RunEvidence, names_file

    folder = "/tmp/loopbench-mcp-0/task-0123456789/workspace"
    assert names_file("memo.cfg", "memo.cfg") and names_file("./memo.cfg", "memo.cfg")
    assert names_file(f"{folder}/memo.cfg", "memo.cfg")
    assert names_file(f"{folder}/sub/../memo.cfg", "memo.cfg")
    assert not names_file(f"{folder}/workspace/memo.cfg", "memo.cfg")  # a folder not there
    assert not names_file(f"{folder}/sub/memo.cfg", "memo.cfg")
    assert not names_file("sub/memo.cfg", "memo.cfg") and not names_file(None, "memo.cfg")

    def run(**how: Any) -> RunEvidence:
        state = new_run("m", "q")
        arguments = json.dumps({"path": "memo.cfg"})
        error = how.pop("error", "no such file: memo.cfg")
        state.tool_log.append(
            ToolRun(1, "c1", "read_file", arguments, ok=False, ran=how.pop("ran", True),
                    error=error, **how)
        )  # fmt: skip
        return RunEvidence(state)

    assert run().reads_of(["read_file"], "memo.cfg") == {False}
    assert run().reads_of(["read_text_file"], "memo.cfg") == set()  # not a read tool here
    assert run(ran=False).reads_of(["read_file"], "memo.cfg") == set()  # refused before it ran
    assert run(cached=True).reads_of(["read_file"], "memo.cfg") == set()
    assert run(bug=True).reads_of(["read_file"], "memo.cfg") == set()
    assert run(error="refused: outside").reads_of(["read_file"], "memo.cfg") == set()
    declined = run()
    declined.state.rejected["1.0"] = "no"
    assert declined.reads_of(["read_file"], "memo.cfg") == set()


def test_on_the_filesystem_server_a_reads_result_is_no_listing() -> None:
    """read_multiple_files reports a path it could not read inside a successful result: the
    file's name in it shows nothing, so only the surface's listing tools list."""
    from evals.mcp.surfaces import over_surface

    taskset = over_surface(load_tasks("evals/tasks/gen-test-s1000-n60.json"), "files", "filesystem")
    task = next(t for t in taskset.tasks if t.kind == "exists")
    assert task.answer is not None
    name = str(task.answer.subject)  # type: ignore[union-attr]
    state = new_run("m", task.question)
    text = f"/x/workspace/{name}: Error - Parent directory does not exist"
    state.messages.append({"role": "tool", "tool_call_id": "c1", "content": text})
    arguments = json.dumps({"paths": [f"/x/workspace/{name}"]})
    state.tool_log.append(ToolRun(1, "c1", "read_multiple_files", arguments, ok=True, ran=True))
    state.status, state.answer = "completed", "Yes."
    checks = {c["kind"]: c["passed"] for c in score(task, state)}
    assert checks["answer"] and not checks["presence"]


async def test_rescore_leaves_a_file_whose_verdicts_stand_as_it_was_written(
    scripted_url: str, tmp_path: Path
) -> None:
    run_file = tmp_path / "run.jsonl"
    await run_files6(scripted_url, "scripted:oracle", PLAIN, run_file)
    written = run_file.stat()
    rescore([run_file])  # today's checks, as the run was scored: nothing to change
    assert (run_file.stat().st_ino, run_file.stat().st_mtime_ns) == (
        written.st_ino,
        written.st_mtime_ns,
    )
    rescore([run_file], stricter(tmp_path))  # a check that now fails: rewritten
    assert run_file.stat().st_ino != written.st_ino


def test_the_loopbench_serve_flags_after_its_own_go_to_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals import loopbench
    from serve_local import daemon

    asked: list[list[str]] = []
    monkeypatch.setattr(daemon, "main", lambda argv: asked.append(argv) or 0)
    assert loopbench.main(["serve", "--port", "8002", "--", "--backend", "llama"]) == 0
    assert loopbench.main(["serve", "--model", "m.gguf", "--slots", "2"]) == 0
    assert asked == [
        ["start", "local", "8002", "--timeout", "900.0", "--", "--backend", "llama"],
        ["start", "local", "8000", "--timeout", "900.0", "--", "--model", "m.gguf", "--slots", "2"],
    ]


def test_rescore_keeps_what_the_state_file_cannot_show_and_nothing_else() -> None:
    from lab.report.rescore import _kept
    from tests.helpers import run_record

    def check(kind: str, passed: bool) -> dict[str, Any]:
        return {"check": f"{kind} x", "kind": kind, "passed": passed}

    recorded = [check("after", True), check("judged", True), check("answer", True)]
    record = run_record(task_id="t", epoch=1, checks=recorded)
    today = [check("after", False), check("judged", False), check("answer", False)]
    # No reward kept: the after and judged verdicts stand; the answer is judged again.
    assert [c["passed"] for c in _kept(today, record, {})] == [True, True, False]
    # A reward kept: the judge's check is judged again from it.
    assert [c["passed"] for c in _kept(today, record, {"tau2": 0.0})] == [True, False, False]
