"""BFCL's multi-turn categories through the harness's own agent loop, judged by BFCL's own
multi-turn checker.

Each entry is one conversation. Its user turns are put to the model in order, each through
``harness.loop.run_loop`` (no system prompt of ours: the messages go as BFCL sends them); the
model's calls run against BFCL's own backend classes (``GorillaFileSystem``, ``TwitterAPI``,
...) in the checker's process, instantiated from the entry's initial configuration, and their
results go back as tool messages. A user turn ends when a reply makes no call; BFCL's step cap
holds (after ``step_limit`` steps with calls in one turn the conversation is force-quit, which
BFCL's checker fails). Under ``miss_func`` the held-back functions are offered from the turn
BFCL says, with BFCL's own words. Every step's calls (under BFCL's names), their results and
the backends' states after each turn go into the record; BFCL's checker re-executes the calls
and compares states and results with the ground truth's. A request that fails is an error,
not an answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.bfcl.bridge import Checker
from evals.record import RunSpec
from evals.record.bfcl import BfclRun, ItemRecord
from harness.client import ChatClient
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.presets import preset
from harness.setup import Setup
from harness.state import RunState
from harness.tools import Tool, ToolContext
from harness.trace import Recorder
from harness.workspace import create_workspace


@dataclass(frozen=True)
class Entry:
    """One multi-turn conversation as BFCL's inference sends it."""

    id: str
    category: str
    turns: list[list[dict[str, Any]]]  # each user turn's messages (empty: a held-back turn)
    tools: list[dict[str, Any]]  # offered from the start
    names: dict[str, str]  # tool name -> BFCL's function name
    held: dict[str, list[dict[str, Any]]]  # turn index -> tools offered from that turn on
    ground_truth: list[list[str]] | None

    @classmethod
    def from_checker(cls, raw: dict[str, Any]) -> Entry:
        return cls(
            id=str(raw["id"]),
            category=str(raw["category"]),
            turns=list(raw["turns"]),
            tools=list(raw["tools"]),
            names=dict(raw["names"]),
            held=dict(raw["held"]),
            ground_truth=raw.get("ground_truth"),
        )

    def question(self) -> str:
        first = next((t for t in self.turns if t), [])
        return next((str(m["content"]) for m in first if m["role"] == "user"), "")


@dataclass
class Step:
    """One reply of a user turn: the calls that ran under BFCL's names, what they returned,
    and the calls refused before they ran (a function never offered, arguments the function
    does not declare), as the model wrote them."""

    calls: list[dict[str, str]]  # {function name: arguments JSON}, as BFCL records a step
    results: list[str] = field(default_factory=list)
    text: str | None = None
    latency_ms: float = 0.0
    refused: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Conversation:
    steps: list[list[Step]] = field(default_factory=list)  # per user turn
    states: list[dict[str, Any]] = field(default_factory=list)  # backends after each turn
    force_quit: bool = False
    error: str | None = None  # the request that failed, if one did
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def result(self) -> list[list[list[dict[str, str]]]]:
        """What BFCL's checker reads: per turn, per step, the step's calls."""
        return [[s.calls for s in turn] for turn in self.steps]

    def latencies(self) -> list[float]:
        return [s.latency_ms for turn in self.steps for s in turn]

    def turns_record(self) -> list[dict[str, Any]]:
        return [
            {
                "steps": [
                    {"calls": s.calls, "results": s.results, "text": s.text,
                     "latency_ms": round(s.latency_ms, 1),
                     **({"refused": s.refused} if s.refused else {})}
                    for s in turn
                ],
                "state": state,
            }
            for turn, state in zip(self.steps, self.states, strict=False)
        ]  # fmt: skip


def _proxies(entry: Entry, specs: list[dict[str, Any]], checker: Checker, key: str) -> list[Tool]:
    """Each BFCL function as a harness tool whose run is BFCL's backend's, in the checker."""

    def make(spec: dict[str, Any]) -> Tool:
        tool_name = spec["function"]["name"]
        name = entry.names.get(tool_name, tool_name)

        async def run(args: dict[str, Any], ctx: ToolContext) -> str:
            done = await checker.execute(entry.id, key, [{name: json.dumps(args)}])
            return str(done["results"][0] if done["results"] else done.get("error"))

        return Tool(
            name=tool_name,
            description=str(spec["function"].get("description", "")),
            parameters=dict(spec["function"].get("parameters") or {"type": "object"}),
            fn=run,
            read_only=False,  # they change the backends' state, never the workspace
            # BFCL pastes argument keys into the call it evaluates: only declared ones pass.
            extra_keys=False,
        )

    return [make(s) for s in specs]


async def converse(
    entry: Entry,
    client: ChatClient,
    model: str,
    checker: Checker,
    key: str,
    step_limit: int,
    held_prompt: str,
    scratch: Path,
    settings: dict[str, Any] | None = None,
    recorder: Recorder | None = None,
    echo: Callable[[str], None] | None = None,
) -> Conversation:
    """One entry's conversation through the agent loop, turn by turn; its state is saved as
    ``ID.json`` wherever ``recorder`` keeps states, and its backends are named ``key``."""
    done = Conversation()
    state = RunState(run_id=entry.id, model=model, messages=[])
    tools = _proxies(entry, entry.tools, checker, key)
    workspace = create_workspace(scratch / "workspace", files={})
    recorder = recorder or Recorder()
    for index, messages in enumerate(entry.turns):
        if str(index) in entry.held:
            tools += _proxies(entry, entry.held[str(index)], checker, key)
            messages = [{"role": "user", "content": held_prompt}]
        state.messages += [dict(m) for m in messages]
        # Every function the entry offers is the task's own (a preset's "tools: task").
        state.meta["task_tools"] = [t.name for t in tools]
        replies_before = len(state.turn_records)
        # BFCL quits after ``step_limit`` steps with calls in one turn; the reply after the
        # last allowed step is the one that may end the turn.
        # A reply without a call ends the turn, cut at the length limit or not, as in BFCL's
        # inference: the loop does not ask the model to finish it.
        config = LoopConfig.of(
            max_turns=state.turns + step_limit + 1, finish_cut_replies=False, **(settings or {})
        )
        state = await run_loop(
            state, client, Setup(tools, workspace, system_prompt=False), config, recorder
        )
        steps = _steps(entry, state, replies_before)
        done.steps.append(steps)
        done.states.append((await checker.execute(entry.id, key, []))["states"])
        if state.status == "failed":
            done.error = state.error or "the request failed"
            break
        if state.status != "completed":
            done.force_quit = True
            break
        if echo is not None:
            echo(f"  {entry.id} turn {index}: {sum(bool(s.calls) for s in steps)} steps with calls")
    done.model_calls = len(state.turn_records)
    done.prompt_tokens = sum(t.prompt_tokens for t in state.turn_records)
    done.completion_tokens = sum(t.completion_tokens for t in state.turn_records)
    await checker.forget(key)
    return done


def conversation_key(run_file: Path, entry_id: str) -> str:
    """The name of a conversation's backends in the checker: one set per run and entry. BFCL
    builds code from it, so it is an identifier: the run file's name (the user's, with any
    characters) reduced to ``[A-Za-z0-9_]`` and told apart by a hash of it."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", run_file.stem)[:40]
    digest = hashlib.sha256(run_file.name.encode()).hexdigest()[:8]
    return f"{stem}_{digest}_{re.sub(r'[^A-Za-z0-9_]', '_', entry_id)}"


def _steps(entry: Entry, state: RunState, first: int) -> list[Step]:
    """The replies of one user turn, from the transcript: each reply's calls that ran on BFCL's
    backends (under BFCL's names) with what they returned, in order; a call refused before it
    ran is kept apart, as the model wrote it, and never goes to BFCL's checker, which turns
    each call into code. Calls are told apart by reply and position (providers reuse ids)."""
    ran = {(r.turn, r.index) for r in state.tool_log if r.ran}
    at = [i for i, m in enumerate(state.messages) if m["role"] == "assistant"]
    steps = []
    for turn, record in enumerate(state.turn_records[first:], start=first + 1):
        if turn > len(at):
            break
        reply = state.messages[at[turn - 1]]
        calls: list[dict[str, str]] = []
        refused: list[dict[str, str]] = []
        for index, call in enumerate(reply.get("tool_calls") or []):
            name, arguments = call["function"]["name"], call["function"].get("arguments") or "{}"
            if (turn, index) in ran and name in entry.names:
                calls.append({entry.names[name]: arguments})
            else:
                refused.append({str(name): str(arguments)})
        answered = []
        for message in state.messages[at[turn - 1] + 1 :]:
            if message["role"] != "tool":
                break
            answered.append(message.get("content") or "")
        steps.append(Step(calls, answered, reply.get("content"), record.latency_ms, refused))
    return steps


def mean_latency(conversation: Conversation) -> float | None:
    latencies = conversation.latencies()
    return statistics.fmean(latencies) if latencies else None


def _scratch() -> tempfile.TemporaryDirectory[str]:
    """An empty folder for the loop's workspace: BFCL's backends hold the conversation's
    world, in the checker's process."""
    return tempfile.TemporaryDirectory(prefix="bfcl-multi-")


def loop_settings(chosen: str, max_tokens: int | None) -> dict[str, Any]:
    """The conversations' loop settings: the preset's, with ``--max-tokens`` as its reply cap."""
    found = dict(preset(chosen).settings)
    if max_tokens is not None:
        found["max_tokens_per_turn"] = max_tokens
    return found


async def judge(
    entry: Entry,
    client: ChatClient,
    model: str,
    checker: Checker,
    key: str,
    loaded: dict[str, Any],
    settings: dict[str, Any],
    recorder: Recorder | None = None,
) -> tuple[Conversation, dict[str, Any]]:
    """One entry's conversation and BFCL's verdict on it; a conversation that a failed request
    cut short is an error, never put to the checker as an answer."""
    with _scratch() as scratch:
        done = await converse(
            entry,
            client,
            model,
            checker,
            key,
            int(loaded["step_limit"]),
            str(loaded["held_prompt"]),
            Path(scratch),
            settings=settings,
            recorder=recorder,
        )
    if done.error is not None:
        return done, {"valid": False, "error_type": "request_error", "errors": [done.error]}
    return done, await checker.score_multi(entry.id, entry.category, done.result())


def entry_record(
    spec: RunSpec,
    run: BfclRun,
    entry: Entry,
    done: Conversation,
    verdict: dict[str, Any],
    answered_by: list[str],
) -> dict[str, Any]:
    """A multi-turn entry's record: every step's calls, the conversation turn by turn."""
    calls = [call for turn in done.result() for step in turn for call in step]
    latency = mean_latency(done)
    texts = [s.text for turn in done.steps for s in turn if s.text]
    fields = {
        "spec": spec,
        "bfcl": run,
        "id": entry.id,
        "category": entry.category,
        "question": entry.question(),
        "calls": [
            {
                "name": next((t for t, f in entry.names.items() if f == name), name),
                "function": name,
                "arguments": arguments,
            }
            for call in calls
            for name, arguments in call.items()
        ],
        "content": texts[-1] if texts else None,
        "request_error": done.error,
        "checker_input": done.result(),
        "valid": verdict["valid"] and done.error is None,
        "error_type": verdict["error_type"],
        "errors": verdict["errors"],
        "latency_ms": None if latency is None else round(latency, 1),
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens,
        "answered_by": answered_by,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "turns": done.turns_record(),
        "model_calls": done.model_calls,
        "force_quit": done.force_quit,
    }
    return ItemRecord.model_validate(fields).line()
