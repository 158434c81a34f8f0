"""What a record keeps of the environment its task ran on: one small model per environment,
named by ``name``, the record's ``environment`` field a union of them tagged by that name. An
environment (``evals.environments``) fills its own and nothing else. A new environment with
figures of its own adds its model here and one member to the union; until then (or for one a
test adds) its record reads as :class:`OtherData`, its name and what it kept as given."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag


class _Data(BaseModel):
    """What every environment's record data answers."""

    def offered_tools(self) -> set[str]:
        """Tools offered to the run beyond this project's own (a server's), by name: what a
        call written as text may name besides ours."""
        return set()


class WorkspaceData(_Data):
    """A folder of files: nothing beyond what every record keeps."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["workspace"] = "workspace"


class DatabaseData(_Data):
    """A database: where the data was (``sqlite``, or the PostgreSQL URL without its password)
    and one audit entry per ``run_sql`` call (turn, sql, ms, rows, cut, error, timed_out,
    refused_write)."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["database"] = "database"
    database: str | None = None
    audit: list[dict[str, Any]] | None = None


class McpServerData(BaseModel):
    """One MCP server a task run started: its name in the task file, what it calls itself and
    its version (``serverInfo``), and each tool it offered with its input schema's hash."""

    model_config = ConfigDict(extra="forbid")

    name: str
    server_name: str | None = None
    server_version: str | None = None
    tools: dict[str, str] = {}


class McpData(_Data):
    """Tools from MCP servers (``evals.environments.mcp``): the servers as started (None: the
    run never started them, or they failed before listing their tools), and the database file
    a ``{database}`` placeholder named, when the task names a bank."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["mcp"] = "mcp"
    servers: list[McpServerData] | None = None
    database: str | None = None

    def offered_tools(self) -> set[str]:
        return {name for server in self.servers or [] for name in server.tools}


class Tau2Data(_Data):
    """One of τ²-bench's tasks (``evals.environments.tau2``): its domain and τ²'s own id, the
    tau2 package that ran it, and τ²'s evaluator's verdict: the reward (None: never judged,
    the run an error) and its parts as τ² writes them (``db_check``, ``communicate_checks``,
    ``env_assertions``, ``action_checks``, ``reward_breakdown``)."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["tau2"] = "tau2"
    domain: str
    task: str
    tau2_version: str | None = None
    reward: float | None = None
    reward_info: dict[str, Any] | None = None


class OtherData(_Data):
    """An environment this module has no model for: its name, and what it kept as fields."""

    model_config = ConfigDict(extra="allow")

    name: str


# Every environment with a model of its own: the union's members, each tagged by its name.
_MODELS: tuple[type[_Data], ...] = (WorkspaceData, DatabaseData, McpData, Tau2Data)
_KNOWN = tuple(str(m.model_fields["name"].default) for m in _MODELS)


def _tag(value: Any) -> str:
    name = value.get("name") if isinstance(value, dict) else getattr(value, "name", None)
    return name if name in _KNOWN else "other"


EnvironmentData = Annotated[
    Annotated[WorkspaceData, Tag("workspace")]
    | Annotated[DatabaseData, Tag("database")]
    | Annotated[McpData, Tag("mcp")]
    | Annotated[Tau2Data, Tag("tau2")]
    | Annotated[OtherData, Tag("other")],
    Discriminator(_tag),
]
