"""``listing``: how list_files reports the folder, by name or by size, biggest first (as
``ls -S`` does)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from harness.policies.base import Config, Hook, Setting
from harness.tools import LIST_TOOL, Tool, ToolContext, listed_line

# No count in the header: a listing that states how many files there are would be an answer
# an echo of the tool result passes for.
BY_SIZE_HEAD = "Files sorted by size, biggest first:"

LISTING: Setting[Literal["plain", "by_size"]] = Setting(
    "listing",
    "plain",
    "list_files by name, or by size, biggest first",
    "choice",
    choices=("plain", "by_size"),
    doc=(
        "what `list_files` returns: files by name, or sorted by size, biggest first (as `ls -S`; no"
        " count, which an echo of the listing would pass for)"
    ),
)


async def list_by_size(_: dict[str, Any], ctx: ToolContext) -> str:
    sizes = ctx.workspace.sizes()
    if not sizes:
        return "The workspace is empty."
    ordered = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    return "\n".join([BY_SIZE_HEAD, *(listed_line(name, size) for name, size in ordered)])


class Listing(Hook):
    name = "listing"
    settings = (LISTING,)

    def offer(self, config: Config, tools: list[Tool], declared: list[str] | None) -> list[Tool]:
        if LISTING.of(config) != "by_size":
            return tools
        return [replace(t, fn=list_by_size) if t.name == LIST_TOOL else t for t in tools]


HOOK = Listing()
