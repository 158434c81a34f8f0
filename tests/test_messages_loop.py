"""The loop over the Messages shape: the action for each stop reason, the same runs and costs
as the chat shape, and the wire shape and raw stop reason in records and traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from harness.client import ProviderClient
from harness.config import LoopConfig
from harness.loop import SYSTEM_PROMPT, run_loop
from harness.messages_client import NO_CONTENT, MessagesClient, messages_param
from harness.policies.nudges import NUDGE
from harness.presets import preset
from harness.replies import FINISH_BRIEFLY
from harness.scenarios import SCENARIO_TASKS
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.trace import Recorder
from harness.workspace import create_workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from serve_local.scenarios import PLAN_ANSWER
from tests.helpers import run_harness


async def drive(url: str, model: str, api: str, tmp_path: Path, **config: Any) -> RunState:
    scenario = model.removeprefix("scripted:").split("+")[0]
    state = new_run(model, SCENARIO_TASKS[scenario], system=SYSTEM_PROMPT)
    workspace = create_workspace(tmp_path / f"{api}-{state.run_id}")
    client = MessagesClient(url) if api == "anthropic" else ProviderClient(url)
    recorder = Recorder(trace_path=tmp_path / f"{state.run_id}.trace.jsonl")
    async with client:
        await run_loop(
            state,
            client,
            Setup(default_tools(), workspace),
            LoopConfig.of(**config),
            recorder=recorder,
        )
    return state


def reasons(state: RunState) -> list[str]:
    return [t.finish_reason for t in state.turn_records]


async def test_plan_takes_three_turns_at_the_same_cost_in_both_shapes(
    scripted_url: str, tmp_path: Path
) -> None:
    chat = await drive(scripted_url, "scripted:plan", "openai", tmp_path)
    messages = await drive(scripted_url.removesuffix("/v1"), "scripted:plan", "anthropic", tmp_path)
    assert (messages.status, messages.turns, messages.tool_runs) == ("completed", 3, 2)
    assert messages.answer == PLAN_ANSWER
    assert reasons(messages) == ["tool_use", "tool_use", "end_turn"]
    assert reasons(chat) == ["tool_calls", "tool_calls", "stop"]
    assert messages.per_turn_prompt_tokens == chat.per_turn_prompt_tokens
    assert messages.completion_tokens == chat.completion_tokens
    assert messages.cost_usd == chat.cost_usd
    assert messages.cost_usd == pytest.approx(
        messages.prompt_tokens * 2e-6 + messages.completion_tokens * 12e-6
    )
    assert {t.api for t in messages.turn_records} == {"anthropic"}
    assert messages.stop_reason == "end_turn"


async def test_max_tokens_asks_to_finish_briefly(scripted_url: str, tmp_path: Path) -> None:
    state = await drive(scripted_url, "scripted:plan+trunc@2", "anthropic", tmp_path)
    assert reasons(state) == ["tool_use", "tool_use", "max_tokens", "end_turn"]
    assert state.messages[-2] == {"role": "user", "content": FINISH_BRIEFLY}
    assert (state.status, state.answer) == ("completed", PLAN_ANSWER)


async def test_stop_sequence_completes_with_the_text_so_far(
    scripted_url: str, tmp_path: Path
) -> None:
    state = await drive(scripted_url, "scripted:plan+stopseq@2", "anthropic", tmp_path)
    assert (state.status, state.turns, state.stop_reason) == ("completed", 3, "stop_sequence")
    assert state.answer and PLAN_ANSWER.startswith(state.answer) and state.answer != PLAN_ANSWER
    assert state.turn_records[-1].stop_sequence == "STOP"


@pytest.mark.parametrize(("turn", "tool_runs"), [(0, 2), (2, 2)])
async def test_pause_turn_is_sent_back_unchanged_and_counts_as_a_turn(
    scripted_url: str, tmp_path: Path, turn: int, tool_runs: int
) -> None:
    plain = await drive(scripted_url, "scripted:plan", "anthropic", tmp_path)
    paused = await drive(scripted_url, f"scripted:plan+pause@{turn}", "anthropic", tmp_path)
    assert reasons(paused)[turn] == "pause_turn"
    assert (paused.status, paused.turns, paused.tool_runs) == ("completed", 4, tool_runs)
    assert paused.answer == PLAN_ANSWER  # the paused half and its continuation, as one text
    assert paused.cost_usd > plain.cost_usd
    # Nothing was added between the paused reply and the request that continued it.
    at = [i for i, m in enumerate(paused.messages) if m["role"] == "assistant"][turn]
    assert paused.messages[at + 1]["role"] == "assistant"


async def test_refusal_fails_and_is_recorded(scripted_url: str, tmp_path: Path) -> None:
    state = await drive(scripted_url, "scripted:plan+refuse@1", "anthropic", tmp_path)
    assert (state.status, state.turns, state.tool_runs) == ("failed", 2, 1)
    assert state.refusal == "I can't help with that request."
    assert state.stop_reason == "refusal"
    trace = [json.loads(line) for line in (tmp_path / f"{state.run_id}.trace.jsonl").open()]
    stopped = trace[-1]
    assert (stopped["type"], stopped["status"], stopped["stop_reason"]) == (
        "run_stopped",
        "failed",
        "refusal",
    )
    assert [t["api"] for t in trace if t["type"] == "turn"] == ["anthropic", "anthropic"]


@pytest.mark.parametrize("scenario", sorted(set(SCENARIO_TASKS) - {"research"}))
async def test_every_scenario_runs_the_same_in_both_shapes(
    scripted_url: str, tmp_path: Path, scenario: str
) -> None:
    model = f"scripted:{scenario}"
    chat = await drive(scripted_url, model, "openai", tmp_path, max_turns=8)
    messages = await drive(scripted_url, model, "anthropic", tmp_path, max_turns=8)
    same = ("status", "turns", "tool_runs", "answer", "interruption", "refusal")
    assert {k: getattr(messages, k) for k in same} == {k: getattr(chat, k) for k in same}
    if scenario != "malformed":  # its unparseable arguments cannot travel as an input object
        assert messages.cost_usd == chat.cost_usd


def _said(state: RunState) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in state.messages]


@pytest.mark.parametrize(
    ("scenario", "turns", "answer"), [("silent", 2, PLAN_ANSWER), ("mute", 3, "")]
)
async def test_an_empty_reply_and_its_nudges_go_on_as_in_the_chat_shape(
    scripted_url: str, tmp_path: Path, scenario: str, turns: int, answer: str
) -> None:
    # The penalized preset nudges twice at most; an empty reply is then not the last turn.
    policy = preset("penalized").settings
    chat = await drive(scripted_url, f"scripted:{scenario}", "openai", tmp_path, **policy)
    messages = await drive(scripted_url, f"scripted:{scenario}", "anthropic", tmp_path, **policy)
    assert (messages.status, messages.turns, messages.answer) == ("completed", turns, answer)
    assert messages.error is None
    assert sum(m["content"] == NUDGE for m in messages.messages) == turns - 1
    # The run state keeps each empty reply as it came; only the wire says it had no content.
    assert messages.messages[2] == {"role": "assistant", "content": None}
    assert NO_CONTENT not in json.dumps(messages.messages)
    assert _said(messages) == _said(chat)
    assert (chat.status, chat.turns, chat.answer) == ("completed", turns, answer)


def test_failed_results_go_out_with_is_error() -> None:
    transcript = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "Error: x", "is_error": True},
        {"role": "tool", "tool_call_id": "b", "name": "list_files", "content": "ok"},
        {"role": "user", "content": "conclude"},
    ]  # fmt: skip
    turns = messages_param(transcript)
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    results = turns[2]["content"]
    assert [b.get("is_error", False) for b in results[:2]] == [True, False]
    assert results[2] == {"type": "text", "text": "conclude"}


async def test_recover_sends_is_error_and_the_server_reads_it(
    scripted_url: str, tmp_path: Path
) -> None:
    state = await drive(scripted_url, "scripted:recover", "anthropic", tmp_path)
    assert state.status == "completed" and state.messages[3].get("is_error") is True


def test_cli_plan_over_messages_takes_three_turns(scripted_url: str, tmp_path: Path) -> None:
    root = scripted_url.removesuffix("/v1")
    done = run_harness(
        "run", "--scenario", "plan", "--api", "anthropic", "--base-url", root, "--json",
        "--state-dir", str(tmp_path), url="http://127.0.0.1:9/v1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["turns"], summary["tool_runs"]) == ("completed", 3, 2)
    assert summary["stop_reason"] == "end_turn"
    assert summary["cost_usd"] == round(
        summary["prompt_tokens"] * 2e-6 + summary["completion_tokens"] * 12e-6, 8
    )
    trace = tmp_path / f"{summary['run_id']}.trace.jsonl"
    turns = [json.loads(line) for line in trace.open() if '"turn"' in line]
    assert [(t["api"], t["finish_reason"]) for t in turns if t["type"] == "turn"] == [
        ("anthropic", "tool_use"),
        ("anthropic", "tool_use"),
        ("anthropic", "end_turn"),
    ]


class Tap:
    """ASGI middleware that notes the path and model of every request the server gets."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str]]) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def tapped() -> Message:
            message = await receive()
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                self.seen.append((scope["path"], json.loads(body)["model"]))
            return message

        await self.app(scope, tapped, send)


def test_a_research_child_speaks_the_parents_shape(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    app = create_app(ScriptedBackend())
    app.add_middleware(Tap, seen=seen)
    with running_server(app) as url:
        done = run_harness(
            "run", "--scenario", "research", "--api", "anthropic", "--base-url", url,
            "--json", "--state-dir", str(tmp_path), url="http://127.0.0.1:9/v1", cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["turns"]) == ("completed", 2)
    assert "max_turns_exceeded after 5 turns" in summary["answer"]
    child = [path for path, model in seen if model == "scripted:runaway"]
    assert len(child) == 5  # the child's cap, each turn asked once
    assert {path for path, _ in seen} == {"/v1/messages"}


async def test_oracle_eval_gives_the_same_records_in_both_shapes(
    scripted_url: str, tmp_path: Path
) -> None:
    runs = {}
    for api, url in (("openai", scripted_url), ("anthropic", scripted_url.removesuffix("/v1"))):
        settings = EvalSettings(
            serving=Serving(
                base_url=url if api == "openai" else f"{url}/v1", model="scripted:oracle", api=api
            ),
            out=tmp_path / f"{api}.jsonl",
        )
        runs[api] = read_records(await run_eval(settings, echo=lambda _: None))
    same = ("task_id", "status", "turns", "tool_runs", "prompt_tokens", "completion_tokens",
            "cost_usd", "answer", "correct", "tools_called")  # fmt: skip
    for chat, messages in zip(runs["openai"], runs["anthropic"], strict=True):
        assert {k: messages[k] for k in same} == {k: chat[k] for k in same}
        assert (chat["spec"]["api"], messages["spec"]["api"]) == ("openai", "anthropic")
        assert messages["turn_finish_reasons"] == ["tool_use", "tool_use", "end_turn"]
        assert messages["stop_reason"] == "end_turn"
    assert all(r["correct"] for r in runs["anthropic"])
    assert runs["anthropic"][0]["spec"]["label"].endswith("/anthropic")
