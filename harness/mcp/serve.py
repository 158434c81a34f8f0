"""This project's tools served over MCP (stdio), so Inspect, the OpenAI Agents SDK, llama-server
or a desktop client can use them: the file tools over a workspace folder (``--workspace``) and
the SQL tools over a database (``--db``: a SQLite file or a ``postgresql://`` URL).

Each tool is served with its own JSON Schema and with annotations that say what it may do
(``readOnlyHint``; ``destructiveHint`` for a tool that needs a person's approval here, so a
client can ask before calling it). Arguments are checked against the schema before the tool
runs (the loop's own ``run_call``); a failure the model should read, a bug in a tool included,
comes back as a result with ``isError``.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.sql import open_database, sql_tools
from harness.state import Call
from harness.toolrun import run_call
from harness.tools import Tool, ToolContext, default_tools
from harness.workspace import Workspace, create_workspace

if TYPE_CHECKING:  # the MCP SDK loads when the server starts (loopbench --help stays quick)
    import mcp.types as types
    from mcp.server.lowlevel import Server

# The file tools served: the demo's slow scan_archive stays out.
FILE_TOOLS = ("list_files", "read_file", "delete_file")
SERVER_NAME = "loopbench-tools"


def _version() -> str:
    try:
        return version("loopbench")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "0"


def served_tools(workspace: Path | None, db: str | None) -> list[Tool]:
    """The tools a server over ``workspace`` and ``db`` offers (one of them at least)."""
    tools: list[Tool] = []
    if workspace is not None:
        tools += [t for t in default_tools() if t.name in FILE_TOOLS]
    if db is not None:
        tools += sql_tools(open_database(db))
    return tools


def _listing(tool: Tool) -> types.Tool:
    import mcp.types as types

    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.needs_approval and not tool.read_only,
            idempotent_hint=tool.read_only,
            open_world_hint=False,
        ),
    )


def _text(text: str, error: bool = False) -> types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def server(tools: list[Tool], workspace: Workspace) -> Server[Any]:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    """The MCP server for ``tools`` over ``workspace``."""
    by_name = {t.name: t for t in tools}

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_listing(t) for t in tools])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The loop's own way of running a call: lookup, the schema check, errors as text.
        arguments = json.dumps(params.arguments or {})
        call = Call(id="mcp", name=params.name, arguments=arguments, turn=0, index=0)
        outcome = await run_call(call, by_name, ToolContext(workspace=workspace))
        if outcome.error is not None:
            return _text(str(outcome.error), True)
        return _text(outcome.content)

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions="Tools over one workspace folder and/or one database.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(workspace: Path | None, db: str | None, scratch: Path) -> None:
    from mcp.server.stdio import stdio_server

    """Serve over stdin and stdout until the client closes them. With no ``workspace``, the
    SQL tools run over an empty folder under ``scratch``."""
    folder = Workspace(workspace) if workspace else create_workspace(scratch, files={})
    app = server(served_tools(workspace, db), folder)
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())
