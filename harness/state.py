"""The run state: a plain, serializable record; the loop is a function over it."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# 2: approvals are keyed by call position (turn.index), not by call id.
# 3: what the loop's hooks said is recorded in ``asks``, not recognised by its words;
# 4: a request names its ``hook``, a run's meta its ``preset`` and its config's ``settings``.
SCHEMA_VERSION = 4

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
    retry_wait_s: float = 0.0  # seconds waited between those retries (Retry-After, backoff)
    renamed_call_ids: dict[str, str] | None = None  # harness id -> the id the provider sent
    api: str = "openai"  # the wire shape the reply came in: openai | anthropic
    stop_sequence: str | None = None  # the stop sequence that ended the reply, when one did
    # Calls the server refused to make (name, arguments, reason); None in states saved before
    # servers said so, and when it refused none.
    refused_calls: list[dict[str, Any]] | None = None


def call_key(turn: int, index: int) -> str:
    """A call's key within its run: its turn and its place in that turn's reply."""
    return f"{turn}.{index}"


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
    cached: bool = False  # answered from the dedupe cache or by the repeated-call guard
    # Answered by the repeated-call guard: the loop's own record, never read from what the
    # tool message says (a file's text could end like the guard's note).
    repeated: bool = False
    bug: bool = False  # the tool raised something other than ToolError
    invalid: bool = False  # the arguments failed the tool's schema; the tool never ran
    index: int = 0  # position of the call in its turn's reply
    # What the tool reported about its run (a query's rows, a timeout), as data; None when it
    # reported nothing.
    facts: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        """The call's key (``Call.key``), by which an approval names it."""
        return call_key(self.turn, self.index)


@dataclass
class Ask:
    """A request a hook of the loop said to the model: which hook, and the message's index.

    The loop's own record: a hook that needs to know what it asked reads this, never the
    transcript's text, so no file content or rewording can pass for one."""

    hook: str
    at: int
    data: dict[str, Any] | None = None


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
    wall_ms: float = 0.0  # charged at every checkpoint, so a killed run keeps its time
    tool_wall_ms: float = 0.0  # wall time while tools ran; parallel calls overlap, not add up
    answer: str | None = None
    interruption: dict[str, Any] | None = None
    error: str | None = None
    turn_records: list[TurnRecord] = field(default_factory=list)
    tool_log: list[ToolRun] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)  # call keys (turn.index)
    rejected: dict[str, str] = field(default_factory=dict)  # call key -> the person's reason
    # The limit a last call without tools is answering; saved with that call's reply so a
    # resume ends the run under the same limit instead of asking again.
    concluding: dict[str, Any] | None = None
    refusal: str | None = None
    # The reason the last reply ended, as its wire shape named it (stop, end_turn, ...).
    stop_reason: str | None = None
    # The run ended because the provider was unavailable (unreachable, or 429/5xx after its
    # retries): a failure of the machinery, which an eval counts as an error, not an answer.
    provider_unavailable: bool = False
    # The run ended because a tool's server failed (harness.errors.ToolServerFailed): the
    # machinery's fault too.
    tool_server_failed: bool = False
    # The run's wall clock passed the backstop of its time limit while its own work (the
    # model's and the tools' time) was still under the limit: the machine was busy, so the
    # eval counts an error (rerun by --resume), not a timeout of the model's.
    wall_limit_hit: bool = False
    # The task's very first prompt did not fit the model's context: the set-up cannot pose the
    # question on this server (an error). A conversation that outgrows the context through
    # the model's own turns is the model's loss instead (``failed``, counted wrong).
    prompt_too_long: bool = False
    child_cost_usd: float = 0.0  # spent by subagent runs, kept apart from this run's own
    asks: list[Ask] = field(default_factory=list)  # what the loop's hooks said, in order
    meta: dict[str, Any] = field(default_factory=dict)  # how to resume: workspace, settings
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        fields = _upgrade(dict(data))
        fields["turn_records"] = [TurnRecord(**t) for t in fields.get("turn_records", [])]
        fields["tool_log"] = [ToolRun(**t) for t in fields.get("tool_log", [])]
        fields["asks"] = [Ask(**a) for a in fields.get("asks", [])]
        return cls(**fields)

    def asked(self, hook: str) -> list[Ask]:
        """What ``hook`` has said in this run, in order."""
        return [a for a in self.asks if a.hook == hook]

    def just_asked(self, hook: str) -> bool:
        """The newest message is a request ``hook`` made."""
        return (
            bool(self.asks)
            and self.asks[-1].at == len(self.messages) - 1
            and (self.asks[-1].hook == hook)
        )

    @property
    def tool_ms(self) -> float:
        return sum(r.ms for r in self.tool_log)

    @property
    def model_ms(self) -> float:
        return sum(t.latency_ms for t in self.turn_records)

    @property
    def work_ms(self) -> float:
        """The run's own work, what its time limit counts: each turn's model time as the
        server reports it (``prompt_ms + predicted_ms``; the turn's latency where it reports
        none), and each tool run's time. Time queued for a server, or spent by the harness, is
        not work."""
        model = 0.0
        for turn in self.turn_records:
            timings = turn.timings or {}
            reported = [timings.get(k) for k in ("prompt_ms", "predicted_ms")]
            if all(isinstance(v, (int, float)) for v in reported):
                model += sum(float(v) for v in reported if v is not None)
            else:
                model += turn.latency_ms
        return model + self.tool_ms

    @property
    def harness_ms(self) -> float:
        """Time the harness itself took: wall time less provider time and tool wall time."""
        return self.wall_ms - self.model_ms - self.tool_wall_ms

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
            "stop_reason": self.stop_reason,
            "child_cost_usd": round(self.child_cost_usd, 8),
            "total_cost_usd": round(self.cost_usd + self.child_cost_usd, 8),
        }


@dataclass(frozen=True)
class Call:
    """A tool call the model asked for, named by the harness: the turn and the position in it.

    Providers reuse call ids (several number the calls of each reply from zero), so approvals
    and idempotency keys use ``key``, which no other call of the run can share.
    """

    id: str
    name: str
    arguments: str
    turn: int
    index: int

    @property
    def key(self) -> str:
        return call_key(self.turn, self.index)


def signature(name: str, arguments: str) -> str:
    """A call's identity: its tool and its arguments, whatever their spacing or key order."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (json.JSONDecodeError, RecursionError):
        canonical = arguments
    return f"{name}:{canonical}"


def wire_call(call: dict[str, Any], turn: int, index: int) -> Call:
    function = call.get("function") or {}
    return Call(
        id=str(call.get("id", "")),
        name=str(function.get("name", "")),
        arguments=str(function.get("arguments") or "{}"),
        turn=turn,
        index=index,
    )


def asked_calls(state: RunState) -> list[Call]:
    """Every call the run's replies asked for, in order."""
    asked, turn = [], 0
    for message in state.messages:
        if message["role"] == "assistant":
            turn += 1
            asked += [wire_call(c, turn, i) for i, c in enumerate(message.get("tool_calls") or [])]
    return asked


def result_text(state: RunState, call_id: str) -> str | None:
    """The text of the tool message answering ``call_id``, if the transcript holds one."""
    for message in state.messages:
        if message.get("tool_call_id") == call_id:
            return str(message.get("content", ""))
    return None


def last_reply(state: RunState) -> tuple[int, int] | None:
    """(message index, turn number) of the last assistant message, if any."""
    turn, found = 0, None
    for i, message in enumerate(state.messages):
        if message["role"] == "assistant":
            turn += 1
            found = (i, turn)
    return found


def pending(state: RunState) -> list[Call]:
    """Calls the last assistant message asked for that no tool message answers yet."""
    last = last_reply(state)
    if last is None:
        return []
    position, turn = last
    answered = {m.get("tool_call_id") for m in state.messages[position + 1 :]}
    calls = state.messages[position].get("tool_calls") or []
    asked = [wire_call(c, turn, i) for i, c in enumerate(calls)]
    return [c for c in asked if c.id not in answered]


def _upgrade(fields: dict[str, Any]) -> dict[str, Any]:
    version = fields.get("schema_version", SCHEMA_VERSION)
    if version < 2:
        fields = _upgrade_1(fields)
    if version < 3:
        fields = _upgrade_2(fields)
    if version < 4:
        fields = _upgrade_3(fields)
    fields["schema_version"] = SCHEMA_VERSION
    return fields


# What version 2 states said for each hook, as they said it; a v2 state's requests are
# recognised by these words once, on loading, and kept as ``asks`` from then on.
_V2_NUDGES = (
    "Your last reply was empty. Call a tool to find out what you still need, or give your "
    "answer now.",
    "Your last reply was empty. Call a tool to find out what you still need, or call submit "
    "with your answer now.",
)
_V2_READ_FIRST = "You have not read any file yet."
_V2_READ_LISTED = "Some files list_files showed are still unread."


def _upgrade_2(fields: dict[str, Any]) -> dict[str, Any]:
    """A version 2 state kept no record of what hooks said; find it by its words, and move
    read_listed's unread files from the meta into its requests."""
    unread = list((fields.get("meta") or {}).pop("read_listed_unread", []))
    asks, question = [], True
    for at, message in enumerate(fields.get("messages", [])):
        if message.get("role") != "user":
            continue
        text, question = ("" if question else str(message.get("content") or "")), False
        if text in _V2_NUDGES:
            asks.append({"hook": "nudges", "at": at, "data": None})
        elif text.startswith(_V2_READ_FIRST):
            asks.append({"hook": "read_before_answer", "at": at, "data": None})
        elif text.startswith(_V2_READ_LISTED):
            data = {"unread": unread.pop(0)} if unread else None
            asks.append({"hook": "read_listed", "at": at, "data": data})
    fields["asks"] = asks
    return fields


def _upgrade_3(fields: dict[str, Any]) -> dict[str, Any]:
    """Version 3 named a request's hook ``policy``, and the meta of a run started by
    ``python -m harness`` its preset ``policy`` and its config's settings ``policy``."""
    fields["asks"] = [
        {("hook" if k == "policy" else k): v for k, v in a.items()} for a in fields.get("asks", [])
    ]
    meta = dict(fields.get("meta") or {})
    if "policy" in meta:
        meta["preset"] = meta.pop("policy")
    if isinstance(meta.get("config"), dict) and "policy" in meta["config"]:
        config = dict(meta["config"])
        config["settings"] = config.pop("policy")
        meta["config"] = config
    fields["meta"] = meta
    return fields


def _upgrade_1(fields: dict[str, Any]) -> dict[str, Any]:
    """A version 1 state named approvals by call id; name them by the call's position."""
    keys: dict[str, str] = {}
    turn = 0
    for message in fields.get("messages", []):
        if message.get("role") == "assistant":
            turn += 1
            for index, call in enumerate(message.get("tool_calls") or []):
                keys[str(call.get("id"))] = f"{turn}.{index}"
    fields["approved"] = [keys.get(c, c) for c in fields.get("approved", [])]
    fields["rejected"] = {keys.get(c, c): r for c, r in fields.get("rejected", {}).items()}
    return fields


def new_run(
    model: str, task: str, system: str | None = None, run_id: str | None = None
) -> RunState:
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": task})
    return RunState(run_id=run_id or uuid.uuid4().hex[:12], model=model, messages=messages)
