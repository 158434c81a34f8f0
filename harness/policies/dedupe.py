"""``dedupe``: a read-only call identical to an earlier successful one gets that result again,
without running the tool (every tool's, writes included, with ``Config.dedupe_all``)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.policies.base import Config, Hook, Setting
from harness.state import Call, RunState, result_text, signature
from harness.toolrun import ToolOutcome
from harness.tools import Tool

DEDUPE: Setting[bool] = Setting(
    "dedupe",
    False,
    "reuse read-only results",
    "bool",
    doc="reuse an earlier result of an identical read-only call, silently",
)


class Dedupe(Hook):
    name = "dedupe"
    settings = (DEDUPE,)

    def answer_call(
        self, state: RunState, config: Config, tools: Mapping[str, Tool], call: Call
    ) -> tuple[ToolOutcome, str] | None:
        tool = tools.get(call.name)
        if not DEDUPE.of(config) or tool is None or not (tool.read_only or config.dedupe_all):
            return None
        wanted = signature(call.name, call.arguments)
        for run in state.tool_log:
            if run.ok and run.name == call.name and signature(run.name, run.arguments) == wanted:
                earlier = result_text(state, run.call_id)
                if earlier is not None:
                    return ToolOutcome(call, earlier, False, cached=True), earlier
        return None


HOOK = Dedupe()
