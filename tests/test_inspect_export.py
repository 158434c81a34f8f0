"""``python -m evals export --format inspect``: run files as Inspect AI logs, read back with
Inspect's own reader and opened in ``inspect view`` in a real browser."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.cli import main
from evals.errors import RunFileError
from evals.record import kept_file, read_records, read_text
from evals.report.inspect_log import INSTALL, ExportError, export
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from serve_local.process import free_port
from tests.helpers import ROOT
from tests.test_report import CHROMIUM, CHROMIUM_FLAGS, needs_browser

pytest.importorskip("inspect_ai", reason=f"inspect-ai is not installed: {INSTALL}")

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

# The oracle, an adversary whose reads fail (paths outside the workspace), a deletion the
# loop declines, and arguments that are not JSON.
SCENARIOS = ["oracle", "adversary-wrong-paths", "destructive", "malformed"]
COMMITTED = ROOT / "results/runs/20261130-203658-scripted-oracle.jsonl"


@pytest.fixture(scope="module")
def run_files(scripted_url: str, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("runs")

    async def run_all() -> list[Path]:
        return [
            await run_eval(
                EvalSettings(
                    serving=Serving(base_url=scripted_url, model=f"scripted:{name}"),
                    out=folder / f"{name}.jsonl",
                    label=name,
                    loop=eval_loop(max_turns=6),
                ),
                echo=lambda _: None,
            )
            for name in SCENARIOS
        ]

    return asyncio.run(run_all())


@pytest.fixture(scope="module")
def logs(run_files: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    assert main(["export", "--format", "inspect", *map(str, run_files), "--out", str(out)]) == 0
    return out


def _read(logs: Path, run_file: Path) -> EvalLog:
    return read_eval_log(str(logs / f"{run_file.stem}.eval"))


def _in_order(log: EvalLog, records: list[dict[str, Any]]) -> list[EvalSample]:
    """The log's samples in the run file's order; every task run has exactly one."""
    assert log.samples is not None
    found = {(s.id, s.epoch): s for s in log.samples}
    assert sorted(found, key=str) == sorted(((r["task_id"], r["epoch"]) for r in records), key=str)
    assert len(log.samples) == len(records)
    return [found[(r["task_id"], r["epoch"])] for r in records]


def _state(run_file: Path, record: dict[str, Any]) -> dict[str, Any]:
    path = kept_file(run_file, f"{record['run_id']}.json")
    assert path is not None
    state: dict[str, Any] = json.loads(read_text(path))
    return state


def _asked(state: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every call the state's replies asked for: id, tool, arguments as sent."""
    return [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for m in state["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]


def test_every_sample_score_and_tool_call_comes_back(logs: Path, run_files: list[Path]) -> None:
    for run_file in run_files:
        records = read_records(run_file)
        log = _read(logs, run_file)
        assert log.samples is not None and len(log.samples) == len(records)
        assert log.eval.model == records[0]["spec"]["model"]
        assert log.eval.metadata is not None
        assert log.eval.metadata["preset"] == records[0]["spec"]["preset"]
        assert log.eval.metadata["task_set"] == records[0]["spec"]["task_set"]
        assert "model_sha256" in log.eval.metadata and "servers" in log.eval.metadata
        assert log.results is not None
        accuracy = log.results.scores[0].metrics["accuracy"].value
        assert accuracy == sum(r["correct"] for r in records) / len(records)
        for sample, record in zip(_in_order(log, records), records, strict=True):
            assert sample.input == record["question"]
            assert sample.target == [c["check"] for c in record["checks"]]
            assert sample.scores is not None
            score = sample.scores["checks"]
            assert score.value == ("C" if record["correct"] else "I")
            assert score.explanation is not None
            for check in record["checks"]:
                verdict = "passed" if check["passed"] else "FAILED"
                assert f"{verdict}: {check['check']}" in score.explanation
            usage = sample.model_usage[record["spec"]["model"]]
            assert (usage.input_tokens, usage.output_tokens) == (
                record["prompt_tokens"],
                record["completion_tokens"],
            )
            assert sample.working_time == pytest.approx(record["wall_ms"] / 1000, abs=1e-3)
            assert sample.metadata["turn_latency_ms"] == record["turn_latency_ms"]
            assert sample.metadata["preset"] == record["spec"]["preset"]
            state = _state(run_file, record)
            assert len(sample.messages) == len(state["messages"])
            calls = [
                (c.id, c.function, c.arguments, c.parse_error)
                for m in sample.messages
                if isinstance(m, ChatMessageAssistant)
                for c in m.tool_calls or []
            ]
            asked = _asked(state)
            assert [c[:2] for c in calls] == [a[:2] for a in asked]
            for (_, _, arguments, parse_error), (_, _, sent) in zip(calls, asked, strict=True):
                if parse_error is None:
                    assert arguments == json.loads(sent)
                else:
                    assert sent in parse_error
            results = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
            answered = [m["tool_call_id"] for m in state["messages"] if m["role"] == "tool"]
            assert [m.tool_call_id for m in results] == answered
            failed = [r for r in state["tool_log"] if not r["ok"]]
            assert sum(m.error is not None for m in results) == len(failed)


def test_a_declined_deletion_reads_as_an_approval_error(logs: Path, run_files: list[Path]) -> None:
    log = _read(logs, run_files[SCENARIOS.index("destructive")])
    assert log.samples is not None
    errors = [
        m.error
        for s in log.samples
        for m in s.messages
        if isinstance(m, ChatMessageTool) and m.function == "delete_file"
    ]
    assert errors and all(e is not None and e.type == "approval" for e in errors)
    assert all(e is not None and "rejected:" in e.message for e in errors)


def test_arguments_that_are_not_json_keep_what_the_model_sent(
    logs: Path, run_files: list[Path]
) -> None:
    log = _read(logs, run_files[SCENARIOS.index("malformed")])
    assert log.samples is not None
    broken = [
        c
        for s in log.samples
        for m in s.messages
        if isinstance(m, ChatMessageAssistant)
        for c in m.tool_calls or []
        if c.parse_error
    ]
    assert broken and all('{"path": ' in (c.parse_error or "") for c in broken)


def test_a_committed_run_exports(tmp_path: Path) -> None:
    (path,) = export([COMMITTED], tmp_path)
    log = read_eval_log(str(path))
    records = read_records(COMMITTED)
    for sample, record in zip(_in_order(log, records), records, strict=True):
        assert sample.scores is not None
        assert sample.scores["checks"].value == ("C" if record["correct"] else "I")
        called = [
            c.function
            for m in sample.messages
            if isinstance(m, ChatMessageAssistant)
            for c in m.tool_calls or []
        ]
        assert called == record["tools_called"]
        assert sample.output.stop_reason == "stop"
        assert sample.output.completion == record["answer"]


def test_a_missing_run_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match=r"nope\.jsonl: no such run file or folder"):
        export([tmp_path / "nope.jsonl"], tmp_path / "out")


def test_without_inspect_the_error_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    with pytest.raises(ExportError, match=r"pip install -e \"\.\[inspect\]\""):
        export([COMMITTED], tmp_path)
    assert not any(tmp_path.iterdir())


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def viewer(logs: Path) -> Iterator[str]:
    """``inspect view`` serving the exported logs on a free port."""
    port = free_port()
    inspect = Path(sys.executable).with_name("inspect")
    process = subprocess.Popen(
        [str(inspect), "view", "--log-dir", str(logs), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        while not _answers(f"{url}/api/logs"):
            try:
                process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"inspect view exited: {process.stderr.read() if process.stderr else ''}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@needs_browser
def test_inspect_view_shows_a_samples_tool_calls(viewer: str, run_files: list[Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    listed = httpx.get(f"{viewer}/api/logs", timeout=30).json()["files"]
    assert sorted(Path(f["name"]).name for f in listed) == sorted(
        f"{r.stem}.eval" for r in run_files
    )
    oracle = run_files[SCENARIOS.index("oracle")]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            complaints: list[str] = []
            page.on("pageerror", lambda e: complaints.append(str(e)))
            page.goto(f"{viewer}/#/tasks/{oracle.stem}.eval")
            page.get_by_text("What does notes.txt say?").first.click()
            page.get_by_role("tab", name=re.compile("^messages$", re.IGNORECASE)).click()
            expect(page.get_by_text('path: "notes.txt"').first).to_be_visible()
            expect(page.get_by_text("Remember to rotate your logs.").first).to_be_visible()
            expect(page.get_by_text("list_files").first).to_be_visible()
            assert complaints == []
        finally:
            browser.close()


def test_errors_export_as_errored_samples_and_are_not_completed(tmp_path: Path) -> None:
    """A task the machinery ended and one that never ran: errored samples, not wrong answers."""
    records = read_records(COMMITTED)
    records[1] = {**records[1], "status": "error", "error": "the model server answered 503"}
    records[2] = {**records[2], "status": "not_run", "run_id": None, "error": "not run: gone"}
    run_file = tmp_path / COMMITTED.name
    run_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    shutil.copytree(COMMITTED.with_suffix(".runs"), run_file.with_suffix(".runs"))
    (path,) = export([run_file], tmp_path / "logs")
    log = read_eval_log(str(path))
    samples = _in_order(log, records)
    assert samples[1].error is not None and "503" in samples[1].error.message
    assert samples[2].error is not None and "not run" in samples[2].error.message
    assert all(s.error is None for i, s in enumerate(samples) if i not in (1, 2))
    assert log.results is not None and log.results.completed_samples == len(records) - 2
