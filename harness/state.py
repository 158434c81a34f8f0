"""The run state: a plain, serializable record; the loop is a function over it."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 1

Status = Literal[
    "running", "completed", "failed", "max_turns_exceeded", "budget_exceeded", "interrupted"
]
Message = dict[str, Any]


@dataclass
class TurnRecord:
    turn: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    finish_reason: str
    cost_usd: float  # running total after this turn
    timings: dict[str, Any] | None = None
    retries: int = 0  # transient provider errors retried before this reply


@dataclass
class ToolRun:
    """One tool call the harness answered: run, refused, served from cache or declined."""

    turn: int
    call_id: str
    name: str
    arguments: str
    ok: bool
    ran: bool  # the tool's own code executed
    ms: float = 0.0
    error: str | None = None
    cached: bool = False  # answered from the dedupe cache


@dataclass
class RunState:
    run_id: str
    model: str
    messages: list[Message]
    status: Status = "running"
    turns: int = 0
    tool_runs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_ms: float = 0.0
    answer: str | None = None
    interruption: dict[str, Any] | None = None
    error: str | None = None
    turn_records: list[TurnRecord] = field(default_factory=list)
    tool_log: list[ToolRun] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # call id -> the person's reason
    refusal: str | None = None
    child_cost_usd: float = 0.0  # spent by subagent runs, kept apart from this run's own
    meta: dict[str, Any] = field(default_factory=dict)  # how to resume: workspace, settings
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        fields = dict(data)
        fields["turn_records"] = [TurnRecord(**t) for t in fields.get("turn_records", [])]
        fields["tool_log"] = [ToolRun(**t) for t in fields.get("tool_log", [])]
        return cls(**fields)

    @property
    def tool_ms(self) -> float:
        return sum(r.ms for r in self.tool_log)

    @property
    def model_ms(self) -> float:
        return sum(t.latency_ms for t in self.turn_records)

    @property
    def per_turn_prompt_tokens(self) -> list[int]:
        return [t.prompt_tokens for t in self.turn_records]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """The figures a person compares between runs."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "turns": self.turns,
            "tool_runs": self.tool_runs,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "wall_ms": round(self.wall_ms, 1),
            "answer": self.answer,
            "per_turn_prompt_tokens": self.per_turn_prompt_tokens,
            "interruption": self.interruption,
            "error": self.error,
            "refusal": self.refusal,
            "child_cost_usd": round(self.child_cost_usd, 8),
            "total_cost_usd": round(self.cost_usd + self.child_cost_usd, 8),
        }


def pending(state: RunState) -> list[dict[str, Any]]:
    """Calls the last assistant message asked for that no tool message answers yet."""
    last_assistant = max(
        (i for i, m in enumerate(state.messages) if m["role"] == "assistant"), default=None
    )
    if last_assistant is None:
        return []
    answered = {m.get("tool_call_id") for m in state.messages[last_assistant + 1 :]}
    calls: list[dict[str, Any]] = state.messages[last_assistant].get("tool_calls") or []
    return [c for c in calls if c.get("id") not in answered]


def new_run(
    model: str, task: str, system: str | None = None, run_id: str | None = None
) -> RunState:
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": task})
    return RunState(run_id=run_id or uuid.uuid4().hex[:12], model=model, messages=messages)
