"""Replaying committed transcripts through the loop to see the requests each policy makes.

Each committed run's replies are fed back, in order, by a client that answers with them and
keeps every request the loop sends (messages, tools, options), while the tools run for real on
the task's workspace. The requests a policy makes on that path are its behaviour; the golden
file ``tests/data/policy_requests.json`` holds them (hashed) as the loop made them before the
policies became objects, and ``test_policy_replay`` checks each still does.

``python -m tests.replay`` rewrites the golden file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from evals.record import RunRecord, committed, kept_at, read_runs
from evals.tasks import Task, TaskSet, load_tasks
from harness import tools
from harness.approvals import reject
from harness.cancel import CancelToken
from harness.client import ModelReply, TurnOptions
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.presets import presets
from harness.setup import Setup
from harness.state import new_run
from harness.tools import default_tools
from harness.trace import Recorder
from harness.workspace import create_workspace

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).with_name("data") / "policy_requests.json"
TASK_SETS = {
    "files6": "evals/tasks/files6.json",
    "gen-test-s1000-n60": "evals/tasks/gen-test-s1000-n60.json",
}
# Every preset replays the transcripts of these many committed runs (the first of each
# committed run file, by name); each committed run also replays under its own policy.
SAMPLE_PER_FILE = 1


@dataclass
class ReplayClient:
    """Answers each request with the next recorded reply; an empty answer once they run out."""

    replies: list[dict[str, Any]]
    finish: list[str]
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: CancelToken | None = None,
        options: TurnOptions | None = None,
    ) -> ModelReply:
        options = options or TurnOptions()
        self.requests.append(
            {
                "messages": json.loads(json.dumps(messages)),
                "tools": tools,
                "options": options.payload(bool(tools)),
            }
        )
        at = len(self.requests) - 1
        if at < len(self.replies):
            reply = {
                k: v for k, v in self.replies[at].items() if k in ("role", "content", "tool_calls")
            }
            finish = self.finish[at] if at < len(self.finish) else "stop"
        else:
            reply, finish = {"role": "assistant", "content": "I cannot tell."}, "stop"
        return ModelReply(reply, finish, 10, 5, 1.0, model)


def digest(request: dict[str, Any]) -> str:
    """A request as the golden file keeps it: a hash of all of it, and what a reader checks."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"))
    last = request["messages"][-1]
    tools = ",".join(t["function"]["name"] for t in request["tools"])
    options = json.dumps(request["options"], sort_keys=True, separators=(",", ":"))
    said = f"{last['role']}: {str(last.get('content') or '')[:40]}"
    return f"{hashlib.sha256(text.encode()).hexdigest()[:12]} [{tools}] {options} {said}"


def config_for(settings: dict[str, Any], max_turns: int) -> LoopConfig:
    return LoopConfig.of(max_turns=max_turns, settings=settings)


async def replay(state: dict[str, Any], task: Task, config: LoopConfig, scratch: Path) -> list[str]:
    replies = [m for m in state["messages"] if m["role"] == "assistant"]
    finish = [t["finish_reason"] for t in state.get("turn_records", [])]
    client = ReplayClient(replies, finish)
    run = new_run("replay", task.question, run_id="replay")
    run.meta["task_tools"] = task.tools
    workspace = create_workspace(scratch / "workspace", files=task.workspace)
    pause, tools.ARCHIVE_SECONDS = tools.ARCHIVE_SECONDS, 0  # the slow tool's result, at once
    try:
        await run_loop(run, client, Setup(default_tools(), workspace), config, Recorder())
        while run.interruption and run.interruption.get("type") == "approval":
            reject(run, run.interruption["call_id"], "This evaluation runs read-only.")
            await run_loop(run, client, Setup(default_tools(), workspace), config, Recorder())
    finally:
        tools.ARCHIVE_SECONDS = pause  # other tests in this process time the slow tool
    return [digest(r) for r in client.requests]


@cache
def task_set(name: str) -> TaskSet:
    return load_tasks(ROOT / TASK_SETS[name])


def committed_runs() -> list[tuple[str, RunRecord, dict[str, Any], Task]]:
    """(key, record, state, task) of every committed run of a task set still in the repo."""
    found = []
    for path in committed(ROOT / "results" / "runs"):
        for record in read_runs(path):
            if record.spec.task_set not in TASK_SETS or not record.trace_path:
                continue
            trace = kept_at(path, record.trace_path)
            state_file = trace.with_name(trace.name.replace(".trace.jsonl", ".json"))
            if not state_file.exists():
                continue
            tasks = {t.id: t for t in task_set(record.spec.task_set).tasks}
            if record.task_id not in tasks:
                continue
            state = json.loads(state_file.read_text(encoding="utf-8"))
            key = f"{path.stem}/{state['run_id']}"
            found.append((key, record, state, tasks[record.task_id]))
    return found


def cases() -> list[tuple[str, RunRecord, dict[str, Any], Task, dict[str, Any]]]:
    """(key, record, state, task, policy settings): each run under its own policy, and the
    first run of each file under every preset."""
    out = []
    seen_files: dict[str, int] = {}
    for key, record, state, task in committed_runs():
        own = record.spec.preset.settings if record.spec.preset else {}
        out.append((f"{key}:own", record, state, task, own))
        stem = key.split("/")[0]
        if seen_files.get(stem, 0) < SAMPLE_PER_FILE:
            seen_files[stem] = seen_files.get(stem, 0) + 1
            for name, preset in presets().items():
                out.append((f"{key}:{name}", record, state, task, preset["settings"]))
    return out


async def replay_case(
    record: RunRecord, state: dict[str, Any], task: Task, settings: dict[str, Any]
) -> list[str]:
    max_turns = int((record.spec.loop or {}).get("max_turns") or 8)
    with tempfile.TemporaryDirectory() as scratch:
        return await replay(state, task, config_for(settings, max_turns), Path(scratch))


def main() -> None:
    golden = {}
    for key, record, state, task, settings in cases():
        golden[key] = asyncio.run(replay_case(record, state, task, settings))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"{GOLDEN}: {len(golden)} replays, {sum(map(len, golden.values()))} requests",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
