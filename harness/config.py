"""The loop's settings: limits, prices and the loop policies' settings."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from harness.policies.registry import settings_of
from harness.prices import Prices
from harness.tool_errors import ToolErrorPolicy


@dataclass
class LoopConfig:
    """Limits are checked before each model call, so a budget overshoots by at most one turn."""

    max_turns: int | None = 20
    max_budget_usd: float | None = None
    max_total_tokens: int | None = None
    # The run's time limit, across resumes: its own work (RunState.work_ms: the model's and
    # the tools' time), checked before each model call; the wall clock stops the run at the
    # limit too, and a limit reached by wall time only is the machinery's (harness.loop).
    timeout_s: float | None = None
    tool_errors: ToolErrorPolicy = "descriptive"
    stop_on_permanent_error: bool = False
    tool_timeout_s: float = 30.0
    # With the dedupe policy on, reuse the results of every tool, writes included (unsafe,
    # for measurement).
    dedupe_all: bool = False
    cancel_grace_s: float = 1.0  # how long a cancelled tool gets to stop by itself
    # The most of one tool result the model reads (UTF-8 bytes); the rest is cut, the cut said
    # in the result and recorded in the trace. A tool can return megabytes; a context cannot.
    tool_result_cap_bytes: int = 256 * 1024
    cancel_reaches_tools: bool = True  # False: only the provider call sees the token
    # A reply cut at the length limit with no call: True, the model is asked to finish it;
    # False, it is the answer, as any reply without a call (BFCL's multi-turn inference ends
    # the user turn on it).
    finish_cut_replies: bool = True
    prices: Prices = field(default_factory=Prices)
    # Sampling asked of the server on every request of the run; None: greedy, no seed sent.
    temperature: float | None = None
    seed: int | None = None
    # The loop policies' settings (harness.policies.registry), by name; any left out is at
    # its default, so the default is the plain loop. Checked against the registry.
    policy: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.policy = settings_of(self.policy)

    @classmethod
    def of(cls, **values: Any) -> LoopConfig:
        """A config from the loop's own fields and policy settings side by side
        (``LoopConfig.of(max_turns=3, conclude_on_limit=True)``); a name that is neither is an
        error that lists the settings."""
        own = {f.name for f in fields(cls)}
        mine = {k: v for k, v in values.items() if k in own}
        flat = {k: v for k, v in values.items() if k not in own}
        return cls(**{**mine, "policy": {**flat, **(mine.get("policy") or {})}})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopConfig:
        """A config saved with ``asdict``; one saved before policies were objects has their
        settings among its own fields."""
        values = dict(data)
        values["prices"] = Prices(**values["prices"]) if "prices" in values else Prices()
        return cls.of(**values)

    def with_policy(self, **settings: Any) -> LoopConfig:
        """This config with some policy settings changed."""
        return replace(self, policy={**self.policy, **settings})
