"""One task run as the report shows it: its transcript turn by turn (the user's messages, the
model's words and calls, each call's result, approval and timing, what a hook said), read from
the state file and trace kept beside its run file, and how a conversation ended."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.record import RunRecord, kept_file, read_text
from evals.report.compare import Run
from harness.persist import StateFileError, parse
from harness.state import RunState, TurnRecord, asked_calls, new_run


@dataclass
class Call:
    call_id: str
    name: str
    arguments: str
    result: str | None = None
    ok: bool | None = None  # None: no tool result was recorded
    error: str | None = None
    decision: str | None = None  # the approval and its reason, in words


@dataclass
class Timing:
    prompt_n: int
    cache_n: int
    predicted_n: int
    ms: float
    scale: float  # this turn's tokens over the largest turn's in the transcript, for the bar

    def share(self, tokens: int) -> float:
        """A segment's width in percent of the bar's full length."""
        total = self.prompt_n + self.cache_n + self.predicted_n
        return round(100 * self.scale * tokens / total, 2) if total else 0.0


@dataclass
class Turn:
    index: int
    asked: list[str]  # user messages sent with this turn's request, after the task itself
    text: str
    calls: list[Call]
    finish_reason: str | None
    latency_ms: float | None
    timing: Timing | None


@dataclass
class Transcript:
    anchor: str
    run: int
    run_label: str
    task_id: str
    epoch: int
    status: str
    correct: bool
    system: str
    user: str
    turns: list[Turn]
    checks: list[dict[str, Any]]
    answer: str | None
    error: str | None
    interruption: dict[str, Any] | None
    files: list[str] = field(default_factory=list)  # the kept files this transcript came from
    # A conversation's: what the user said after the agent's last turn (its stop word), and
    # how the talk ended (its end, the user, the environment's reward where it gave one).
    closing: list[str] = field(default_factory=list)
    ended: str | None = None


def _decision(key: str | None, state: RunState) -> str | None:
    """The approval given to a call (named by its key, turn.index), with the reason, in words."""
    if key in state.approved:
        return "approved"
    if key is not None and key in state.rejected:
        return f"rejected: {state.rejected[key] or '(no reason given)'}"
    return None


def _calls(
    message: dict[str, Any], results: dict[str, dict[str, Any]], state: RunState
) -> list[Call]:
    log = {r.call_id: r for r in state.tool_log}
    keys = {c.id: c.key for c in asked_calls(state)}
    calls = []
    for c in message.get("tool_calls") or []:
        call_id = c.get("id", "")
        function = c.get("function", {})
        calls.append(
            Call(
                call_id=call_id,
                name=function.get("name", ""),
                arguments=_pretty(function.get("arguments", "")),
                result=(results.get(call_id) or {}).get("content"),
                ok=log[call_id].ok if call_id in log else None,
                error=log[call_id].error if call_id in log else None,
                decision=_decision(keys.get(call_id), state),
            )
        )
    return calls


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except (json.JSONDecodeError, RecursionError, TypeError):
        return str(arguments)  # what the model sent, shown as sent


def _timings(records: list[TurnRecord]) -> list[Timing | None]:
    """Each turn's server timings, scaled to the transcript's largest turn."""

    def tokens(t: dict[str, Any]) -> int:
        return int(t.get("prompt_n", 0)) + int(t.get("cache_n", 0)) + int(t.get("predicted_n", 0))

    largest = max((tokens(r.timings) for r in records if r.timings), default=0)
    found: list[Timing | None] = []
    for r in records:
        t = r.timings
        if not t or not largest:
            found.append(None)
            continue
        found.append(
            Timing(
                prompt_n=int(t.get("prompt_n", 0)),
                cache_n=int(t.get("cache_n", 0)),
                predicted_n=int(t.get("predicted_n", 0)),
                ms=float(t.get("prompt_ms", 0)) + float(t.get("predicted_ms", 0)),
                scale=tokens(t) / largest,
            )
        )
    return found


def _kept_state(path: Path) -> RunState | None:
    """The run state kept in ``path``; None, with a warning naming the file, if it cannot be
    read (truncated, not JSON, not a state)."""
    try:
        return parse(read_text(path), path)
    except (OSError, EOFError, ValueError, StateFileError) as exc:
        # StateFileError names the file itself; one that cannot be read at all (a truncated
        # gzip, bytes that are not UTF-8) does not.
        why = str(exc).removeprefix(f"{path}: ")
        print(
            f"evals view: {path}: not a readable run state ({why}); its task is shown from "
            "its record alone",
            file=sys.stderr,
        )
        return None


def transcript(run: Run, index: int, number: int, record: RunRecord) -> Transcript:
    """One task run's transcript: from its state file when one was kept, else its record."""
    state_file = kept_file(run.path, f"{record.run_id}.json") if record.run_id else None
    # A task that never ran (the server had gone) kept no state, and a state file that cannot
    # be read is passed over with a warning: either way its record alone is shown.
    state = _kept_state(state_file) if state_file else None
    if state is None:
        state_file = None
        state = new_run(record.spec.model, record.question)
    results = {m.get("tool_call_id", ""): m for m in state.messages if m["role"] == "tool"}
    timings = _timings(state.turn_records)
    turns: list[Turn] = []
    asked: list[str] = []  # user messages since the last reply (a nudge, a conclude request)
    for message in state.messages[2 if state.messages[0]["role"] == "system" else 1 :]:
        if message["role"] == "user":
            asked.append(message.get("content") or "")
        if message["role"] != "assistant":
            continue
        i = len(turns)
        # Replies and turn records pair up one to one in a state the loop wrote.
        turn = state.turn_records[i] if i < len(state.turn_records) else None
        turns.append(
            Turn(
                index=i + 1,
                asked=asked,
                text=message.get("content") or "",
                calls=_calls(message, results, state),
                finish_reason=turn.finish_reason if turn else None,
                latency_ms=turn.latency_ms if turn else None,
                timing=timings[i] if turn else None,
            )
        )
        asked = []
    trace_file = kept_file(run.path, f"{record.run_id}.trace.jsonl") if state_file else None
    return Transcript(
        anchor=f"r{index}-{number}",
        run=index,
        run_label=run.label,
        task_id=record.task_id,
        epoch=record.epoch,
        status=record.status,
        correct=record.correct,
        system=next((m["content"] for m in state.messages if m["role"] == "system"), ""),
        user=next((m["content"] for m in state.messages if m["role"] == "user"), record.question),
        turns=turns,
        checks=record.checks,
        answer=record.answer,
        error=record.error,
        interruption=record.interruption,
        files=[str(p.name) for p in (state_file, trace_file) if p is not None],
        closing=asked + _unsent(record, state),
        ended=_ended(record),
    )


def _unsent(record: RunRecord, state: RunState) -> list[str]:
    """A conversation's user messages the agent never read: the one that ended it."""
    talk = record.conversation
    if talk is None or not talk.said:
        return []
    sent = sum(1 for m in state.messages if m["role"] == "user")
    return [t.text for t in talk.said[sent:]]


def _ended(record: RunRecord) -> str | None:
    talk = record.conversation
    if talk is None:
        return None
    user = "a script" if talk.user.scripted else (talk.user.model or "?")
    reward = getattr(record.environment, "reward", None)
    judged = "" if reward is None else f"; reward {reward:g}"
    return (
        f"conversation ended: {talk.end} after {talk.user_turns} user turns (user: {user}){judged}"
    )
