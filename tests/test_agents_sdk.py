"""The OpenAI Agents SDK as a client of our server (``lab.conformance.agents_sdk``): its
requests, with the SDK's defaults, are accepted and its tool calls round-trip, on the scripted
provider and on the real packaged default model. Observed at the server, real uvicorn, real SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evals.tasks import load_tasks
from harness.client import ProviderClient
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from lab.conformance.agents_sdk import ask, ask_all, main
from serve_local.app import create_app
from serve_local.backends.base import Backend
from serve_local.backends.llama import LlamaBackend
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from serve_local.models import resolve
from serve_local.scenarios import PLAN_ANSWER
from tests.helpers import wait_ready

OFFERED = {"list_files", "read_file"}
TASKS = load_tasks().tasks


@dataclass
class Seen:
    """Every request the server got: its body and the status it answered."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)


class Watch:
    """ASGI middleware noting each POST's JSON body and each response's status."""

    def __init__(self, app: ASGIApp, seen: Seen) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def reading() -> Message:
            message = await receive()
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                self.seen.bodies.append(json.loads(body))
            return message

        async def answering(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.seen.statuses.append(message["status"])
            await send(message)

        await self.app(scope, reading, answering)


def watched(backend: Backend) -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    app = create_app(backend)
    app.add_middleware(Watch, seen=seen)
    with running_server(app) as url:
        wait_ready(url)
        yield url, seen


@pytest.fixture
def scripted() -> Iterator[tuple[str, Seen]]:
    yield from watched(ScriptedBackend())


@pytest.fixture(scope="module")
def default_model() -> Iterator[tuple[str, Seen]]:
    yield from watched(LlamaBackend(resolve(None), n_ctx=4096))


async def test_the_sdk_lists_reads_and_gets_the_scripted_answer(
    scripted: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = scripted
    outcome = await ask(url, "scripted:plan", "timeout", TASKS[0].question, tmp_path)
    assert outcome.error is None
    assert outcome.final_output == PLAN_ANSWER
    assert outcome.tool_calls == [
        {"name": "list_files", "arguments": "{}", "valid": True},
        {"name": "read_file", "arguments": '{"path": "errors.log"}', "valid": True},
    ]
    assert outcome.replies == 3 and seen.statuses == [200, 200, 200]
    # The SDK's defaults reached the server: strict schemas with titles, no tool_choice.
    for body in seen.bodies:
        assert "tool_choice" not in body
        assert {t["function"]["name"] for t in body["tools"]} == OFFERED
        for tool in body["tools"]:
            assert tool["function"]["strict"] is True
            parameters = tool["function"]["parameters"]
            assert parameters["additionalProperties"] is False and "title" in parameters
    # Each tool result went back under the call's id, as the next request's tool message.
    results = [m for m in seen.bodies[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"].split()[0] for m in results] == ["access.log", "2026-03-02"]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_the_oracle_answers_the_sdk_as_it_answers_our_loop(
    scripted: tuple[str, Seen], tmp_path: Path, task: Any
) -> None:
    # The oracle's answer is read from the tool results it was sent back: the same answer
    # means the SDK's calls and results made the round trip as our own loop's do.
    url, seen = scripted
    outcome = await ask(url, "scripted:oracle", task.id, task.question, tmp_path)
    state = new_run("scripted:oracle", task.question, system=SYSTEM_PROMPT)
    async with ProviderClient(url) as client:
        workspace = create_workspace(tmp_path / "loop")
        await run_loop(state, client, Setup(default_tools(), workspace), LoopConfig())
    assert state.status == "completed" and state.answer
    assert (outcome.error, outcome.final_output) == (None, state.answer)
    assert [c["name"] for c in outcome.tool_calls] == [r.name for r in state.tool_log]
    assert all(c["valid"] for c in outcome.tool_calls)
    assert set(seen.statuses) == {200}


def test_the_script_writes_one_line_per_question_and_a_table(
    scripted: tuple[str, Seen], tmp_path: Path
) -> None:
    url, _ = scripted
    assert main(["--base-url", url, "--model", "scripted:oracle", "--out", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in (tmp_path / "scripted-oracle.jsonl").open()]
    assert [r["task_id"] for r in lines] == [t.id for t in TASKS]
    assert all(r["model"] == "scripted:oracle" and r["final_output"] for r in lines)
    table = (tmp_path / "scripted-oracle.md").read_text()
    assert all(f"| {t.id} |" in table for t in TASKS)


def test_the_script_names_a_server_that_does_not_answer(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path)])
    assert stopped.value.code == 1
    assert not list(tmp_path.iterdir())


async def test_the_default_model_through_the_sdk_gets_only_accepted_replies(
    default_model: tuple[str, Seen],
) -> None:
    url, seen = default_model
    (entry,) = httpx.get(f"{url}/models").json()["data"]
    outcomes = await ask_all(url, entry["id"], max_turns=5)
    assert len(outcomes) == len(TASKS) == 6
    # Whatever the model answers: every request was accepted...
    assert len(seen.statuses) >= len(TASKS) and set(seen.statuses) == {200}
    # ...every call the SDK ran names an offered tool, with arguments its schema accepts...
    calls = [c for o in outcomes for c in o.tool_calls]
    assert {c["name"] for c in calls} <= OFFERED
    assert all(c["valid"] for c in calls), calls
    # ...the SDK raised nothing but its own turn cap (a bad call would be ModelBehaviorError)...
    assert all(o.error is None or o.error.startswith("MaxTurnsExceeded") for o in outcomes)
    # ...and no final answer is a call left as text, or what is left of one.
    finals = [o.final_output or "" for o in outcomes]
    assert not [o.calls_as_text for o in outcomes if o.calls_as_text]
    assert not [text for text in finals if "{}}" in text or '"arguments"' in text]
