"""How a task names an MCP server (``mcpServers``): the entry alone, light to import, so reading
a task file does not load the MCP SDK (``harness.mcp.servers`` starts the servers)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

PLACEHOLDER = re.compile(r"\{(\w+)\}")


class ServerConfig(BaseModel):
    """One entry of ``mcpServers``: how to start the server, which of its tools to offer
    (``allow``: only these; ``deny``: all but these), and which to treat as read-only whatever
    their annotations say (``read_only``: the task file vouches for them, as an Agents SDK
    user exempts tools from approval; a server that declares no annotations needs it)."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
    read_only: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_list(self) -> ServerConfig:
        if self.allow is not None and self.deny:
            raise ValueError("name either allow or deny, not both")
        return self

    def placeholders(self) -> set[str]:
        """The placeholders this entry uses (``{workspace}``...)."""
        texts = [*self.args, *self.env.values(), self.cwd or ""]
        return {m.group(1) for t in texts for m in PLACEHOLDER.finditer(t)}

    def offers(self, tool: str) -> bool:
        return (self.allow is None or tool in self.allow) and tool not in self.deny
