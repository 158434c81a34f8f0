"""The loop's settings: limits, policies and prices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    # Loop policies (harness.steering); the defaults are the plain loop.
    tools: Literal["all", "read_only", "task"] = "all"  # which tools a run is offered
    # auto; required: the first reply must call a tool; always: every reply must; a tool's
    # name: the first reply must call that tool.
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    submit: bool = False  # offer a submit(answer) tool; the run completes on it
    nudges: int = 0  # how many times an empty reply is met with a request to go on
    # A read-only call identical to an earlier one gets the earlier result and a note
    # ("note"); then "answer" asks the next turn without tools, for the answer, and "submit"
    # asks it to call submit (when offered).
    repeat_guard: Literal["off", "note", "answer", "submit"] = "off"
    max_tokens_per_turn: int | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    example: bool = False  # one worked example (another folder) in the system prompt
    # How list_files reports the folder: "plain" (by name) or "by_size" (sorted by size,
    # biggest first, as ``ls -S`` does).
    listing: Literal["plain", "by_size"] = "plain"
    # The first this many replies must call a tool (after a first-turn choice, if any), so an
    # answer comes only after that many looks.
    required_turns: int = 0
    # The reply after a call that failed must call a tool.
    act_after_error: bool = False
    # A read of a file that does not exist is answered with the names of the files that do.
    name_files_on_miss: bool = False
    # The system prompt asks for every file an answer depends on to be read, and for the answer
    # to say only what the tool results say.
    grounding: bool = False
    # An answer given before any file was read is met, once, with a request to read what it
    # depends on first (or to give it again if it depends on no file's content).
    read_before_answer: bool = False
    # An answer given while files list_files showed are still unread is met with a request to
    # read those the answer depends on, naming none of them (at most READ_LISTED_ASKS times a
    # run, never twice for the same unread files).
    read_listed: bool = False
    # Sampling asked of the server on every request of the run; None: greedy, no seed sent.
    temperature: float | None = None
    seed: int | None = None


# The fields above that make up a loop policy; presets (harness.presets) set only these.
POLICY_FIELDS = (
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "submit",
    "nudges",
    "repeat_guard",
    "dedupe",
    "max_tokens_per_turn",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
    "example",
    "conclude_on_limit",
    "listing",
    "required_turns",
    "act_after_error",
    "name_files_on_miss",
    "grounding",
    "read_before_answer",
    "read_listed",
)
