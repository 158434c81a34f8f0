"""What a task over MCP servers holds: the servers, the reading calls and the intro, each under
a key of its own (registered by the MCP environment as it enters the registry)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, Field

from evals.tasks import TaskFields
from harness.mcp.config import ServerConfig


class McpFields(TaskFields):
    """What a task over MCP servers runs with (``evals.mcp.environment``), each field under a
    key of its own in the task file: the servers, in the shape desktop clients use
    (``mcpServers``); the calls that fetch every result its evidence checks ask for (tool,
    arguments: what the question-blind strategies read first, ``lab.studies.strategies``);
    what the system prompt says the run works on (``intro``, ``{workspace}``: its folder;
    none: the environment's own words). A task set writes the servers and the intro its tasks
    share once, at its top."""

    key: ClassVar[str] = "mcp"
    flat: ClassVar[bool] = True
    shared: ClassVar[tuple[str, ...]] = ("mcpServers", "intro")
    mcp_servers: dict[str, ServerConfig] | None = Field(
        default=None,
        validation_alias=AliasChoices("mcpServers", "mcp_servers"),
        serialization_alias="mcpServers",
    )
    reading: list[tuple[str, dict[str, Any]]] | None = None
    intro: str | None = None

    def asked(self) -> dict[str, Any]:
        """The servers (as configured, defaults left out) and the intro; the reading calls are
        the strategies', never the model's."""
        asked: dict[str, Any] = {}
        if self.intro is not None:
            asked["intro"] = self.intro
        if self.mcp_servers is not None:
            asked["mcpServers"] = {
                n: c.model_dump(exclude_defaults=True) for n, c in self.mcp_servers.items()
            }
        return asked
