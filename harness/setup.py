"""What one run works with: the one context object the loop takes (``run_loop(state, client,
setup)``), as the run's task source gives it. A hook reads from it what it needs (through the
system prompt's :class:`~harness.policies.base.Prompt`), so new context is a field here, never
one more keyword threaded through the loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.tools import Tool
from harness.workspace import Workspace


@dataclass(frozen=True)
class Setup:
    """The tools over the run's workspace; what the system prompt says the run works on (None:
    the loop's own words, a folder of files); what a first look would show of it (a database's
    tables and columns), which a setting may put in the system prompt; and whether the loop
    writes a system prompt at all (False: the messages go as they are, a benchmark's own
    conversation)."""

    tools: list[Tool]
    workspace: Workspace
    intro: str | None = None
    overview: str | None = None
    system_prompt: bool = True
    # What answers a call by a name no tool has (``harness.tools.ToolTable``); None: the loop.
    unknown: Callable[[str], Tool] | None = None
