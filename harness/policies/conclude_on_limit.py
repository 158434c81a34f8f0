"""``conclude_on_limit``: when a limit is reached, one last request that may not call a tool
asks for the answer from what is known. It offers the turn's tools under ``tool_choice:
"none"``, so the prompt keeps its prefix and a server's prefix cache carries into it."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Setting

CONCLUDE = (
    "You have reached the {limit} limit of this task. Do not call any tool. Answer now, as "
    "well as you can from what you already know, and say what you could not check."
)

CONCLUDE_ON: Setting[bool] = Setting(
    "conclude_on_limit",
    False,
    "when a limit hits, ask once more for an answer without tools",
    "bool",
    doc=(
        "when a limit hits, one last call that may not call a tool asks for an answer (the turn's "
        'tools stay offered under `tool_choice: "none"`, so the prompt keeps its prefix for the '
        "server's cache)"
    ),
)


class Conclude(Hook):
    name = "conclude_on_limit"
    settings = (CONCLUDE_ON,)

    def conclusion(self, config: Config, limit: str) -> str | None:
        # A run out of time gets no further turn: concluding would spend more of it.
        if limit == "timeout":
            return None
        return CONCLUDE.format(limit=limit) if CONCLUDE_ON.of(config) else None


HOOK = Conclude()
