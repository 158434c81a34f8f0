"""Inspect AI as a client of our server: its OpenAI-compatible provider runs an Inspect task
(lab/conformance/inspect_task.py) against the scripted backend on a real uvicorn server."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.report.inspect_log import INSTALL
from harness.workspace import SEED_FILES

pytest.importorskip("inspect_ai", reason=f"inspect-ai is not installed: {INSTALL}")

from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

from lab.conformance.inspect_task import notes

# Reads one file with read_file (access.log, whatever it is asked), then answers from it.
MODEL = "openai-api/loopbench/scripted:adversary-wrong-file"


def test_an_inspect_task_runs_its_tool_through_our_server(
    scripted_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPBENCH_BASE_URL", scripted_url)
    monkeypatch.setenv("LOOPBENCH_API_KEY", "local")
    (log,) = inspect_eval(
        notes(workspace=str(tmp_path / "workspace")),
        model=MODEL,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    (sample,) = log.samples
    calls = [
        (c.function, c.arguments)
        for m in sample.messages
        if isinstance(m, ChatMessageAssistant)
        for c in m.tool_calls or []
    ]
    assert calls == [("read_file", {"path": "access.log"})]
    (result,) = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    assert result.error is None and result.text == SEED_FILES["access.log"]
    # The tool's result went back to the server: the answer quotes what only the file holds.
    assert SEED_FILES["access.log"].strip() in sample.output.completion

    turns = [e for e in sample.events if isinstance(e, ModelEvent)]
    assert [e.error for e in turns] == [None, None]
    assert [e.output.stop_reason for e in turns] == ["tool_calls", "stop"]
    usage = [e.output.usage for e in turns]
    assert all(u is not None and u.input_tokens > 0 and u.output_tokens > 0 for u in usage)
    total = log.stats.model_usage[MODEL]
    assert total.input_tokens == sum(u.input_tokens for u in usage if u)
    assert total.output_tokens == sum(u.output_tokens for u in usage if u)


@pytest.mark.parametrize(
    ("fault", "stop_reason"), [("trunc@1", "max_tokens"), ("filter@1", "content_filter")]
)
def test_a_reply_cut_short_reaches_inspect_as_its_stop_reason(
    scripted_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, stop_reason: str
) -> None:
    """finish_reason length and content_filter on the answering turn, as Inspect names them."""
    monkeypatch.setenv("LOOPBENCH_BASE_URL", scripted_url)
    monkeypatch.setenv("LOOPBENCH_API_KEY", "local")
    (log,) = inspect_eval(
        notes(workspace=str(tmp_path / "workspace")),
        model=f"{MODEL}+{fault}",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    turns = [e for e in log.samples[0].events if isinstance(e, ModelEvent)]
    assert [e.output.stop_reason for e in turns] == ["tool_calls", stop_reason]
