"""What a record of a task over MCP servers keeps (registered by the MCP environment as it
enters the registry)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.record import Data


class McpServerData(BaseModel):
    """One MCP server a task run started: its name in the task file, what it calls itself and
    its version (``serverInfo``), and each tool it offered with its input schema's hash."""

    model_config = ConfigDict(extra="forbid")

    name: str
    server_name: str | None = None
    server_version: str | None = None
    tools: dict[str, str] = {}


class McpData(Data):
    """Tools from MCP servers (``evals.mcp.environment``): the servers as started (None: the
    run never started them, or they failed before listing their tools), and the database file
    a ``{database}`` placeholder named, when the task names a bank."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["mcp"] = "mcp"
    servers: list[McpServerData] | None = None
    database: str | None = None

    def offered_tools(self) -> set[str]:
        return {name for server in self.servers or [] for name in server.tools}
