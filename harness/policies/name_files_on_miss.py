"""``name_files_on_miss``: a read of a file that does not exist is answered with the names of
the files that do."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.policies.base import Config, Hook, Setting
from harness.tools import READ_TOOL, Tool, ToolContext

NAME_FILES: Setting[bool] = Setting(
    "name_files_on_miss",
    False,
    "a read of a missing file is answered with the names of the files that exist",
    "bool",
    doc="a read of a missing file is answered with the error and the names of the files there are",
)


async def read_naming_files(args: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.workspace.existing(args.get("path", ""), name_files=True)
    return path.read_text(encoding="utf-8", errors="replace")


class NameFiles(Hook):
    name = "name_files_on_miss"
    settings = (NAME_FILES,)

    def offer(self, config: Config, tools: list[Tool], declared: list[str] | None) -> list[Tool]:
        if not NAME_FILES.of(config):
            return tools
        return [replace(t, fn=read_naming_files) if t.name == READ_TOOL else t for t in tools]


HOOK = NameFiles()
