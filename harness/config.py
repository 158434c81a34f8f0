"""The loop's settings: limits, policies and prices."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.policies import ToolErrorPolicy
from harness.prices import Prices


@dataclass
class LoopConfig:
    """Limits are checked before each model call, so a budget overshoots by at most one turn."""

    max_turns: int | None = 20
    max_budget_usd: float | None = None
    max_total_tokens: int | None = None
    timeout_s: float | None = None  # wall clock for the whole run, across resumes
    tool_errors: ToolErrorPolicy = "descriptive"
    stop_on_permanent_error: bool = False
    tool_timeout_s: float = 30.0
    dedupe: bool = False  # reuse results of identical read-only calls
    dedupe_all: bool = False  # ... of every tool, writes included (unsafe, for measurement)
    conclude_on_limit: bool = False  # one last call without tools when a limit hits
    cancel_grace_s: float = 1.0  # how long a cancelled tool gets to stop by itself
    cancel_reaches_tools: bool = True  # False: only the provider call sees the token
    prices: Prices = field(default_factory=Prices)
