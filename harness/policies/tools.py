"""``tools``: which tools a run is offered."""

from __future__ import annotations

from typing import Literal

from harness.policies.base import Config, Hook, Setting
from harness.tools import Tool

TOOLS: Setting[Literal["all", "read_only", "task"]] = Setting(
    "tools",
    "all",
    "tools offered: all; read_only: those that change nothing; task: those the task declares "
    "(the read-only ones for a task that declares none)",
    "choice",
    choices=("all", "read_only", "task"),
    doc=(
        "the tools offered: all four, the read-only ones, or those the task declares (a task file's"
        " `tools`; a task that declares none is read-only and gets the read-only tools)"
    ),
)


class Offer(Hook):
    name = "tools"
    settings = (TOOLS,)

    def offer(self, config: Config, tools: list[Tool], declared: list[str] | None) -> list[Tool]:
        wanted = TOOLS.of(config)
        if wanted == "task" and declared is not None:
            return [t for t in tools if t.name in declared]
        if wanted in ("task", "read_only"):
            return [t for t in tools if t.read_only]
        return list(tools)


HOOK = Offer()
