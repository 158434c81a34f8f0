"""Tools from MCP servers: the servers a run names, started over stdio with the official ``mcp``
SDK, their tools offered as :class:`~harness.tools.Tool` s that go through every control of the
loop.

A server is named in the shape Claude Desktop, Cursor and llama-server's
``--mcp-servers-config`` use (``{"command", "args", "env", "cwd"}``), with an allow or deny list
of its tools. Placeholders in ``args``, ``env`` and ``cwd`` (``{workspace}``, the run's folder)
are filled in per run. A command that is not a path is looked up in the project's folder of
installed servers first (``LOOPBENCH_MCP_BIN``, default ``mcp-servers/bin`` of the checkout),
then among the running Python's entry points, then on PATH.

What a server's tools may do is read from its annotations: a tool that says it is read-only is
deduplicated and guarded against repeats, and needs no approval; any other (destructive, or
not known to be read-only) asks for approval first. A result with ``isError`` is a tool error
the model reads; a server that will not start, dies, hangs or breaks the protocol raises
:class:`~harness.errors.ToolServerFailed`, and the run ends as an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from harness.errors import ToolError, ToolServerFailed
from harness.mcp.config import PLACEHOLDER, ServerConfig
from harness.schemas import schema_problem
from harness.tools import Tool, ToolContext

if TYPE_CHECKING:  # the MCP SDK loads when a server starts, not when a task file is read
    from mcp import ClientSession

__all__ = [
    "MCP_BIN",
    "ServerConfig",
    "ServerRecord",
    "Servers",
    "open_servers",
    "tool_text",
]

# Where the project installs the community servers it runs (make mcp-servers): one entry point
# per server, looked up before PATH.
MCP_BIN = Path(
    os.environ.get("LOOPBENCH_MCP_BIN", Path(__file__).resolve().parents[2] / "mcp-servers" / "bin")
)
# How long a server may take to start and answer ``initialize`` and ``tools/list``.
START_TIMEOUT_S = 30.0
# The most text one result may carry into the run before it is cut (the loop caps it lower).
RESULT_CAP_CHARS = 4_000_000
# The session's own bound on a call: far above the loop's tool timeout, which fires first.
CALL_READ_S = 24 * 3600.0
# What one server's listing may put in front of the model: a description is cut here, a
# larger input schema or more tools fail the server (they would swamp the prompt).
DESCRIPTION_CAP_CHARS = 2_000
SCHEMA_CAP_BYTES = 64_000
TOOLS_CAP = 128
# One JSON-RPC message from a server (a line on its stdout) and its stderr log: past these the
# relay stops the server (harness.mcp.relay). A listing at the caps above is under 9 MB.
MESSAGE_CAP_BYTES = 16 * 1024 * 1024
STDERR_CAP_BYTES = 1024 * 1024
INFO_CAP_CHARS = 200
_NAME = re.compile(r"[^A-Za-z0-9_-]")


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` replaced by its value; an unknown name is an error."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ToolServerFailed(
                f"{{{name}}} is not a placeholder this run fills (it fills: "
                f"{', '.join('{' + k + '}' for k in values) or 'none'})"
            )
        return values[name]

    return PLACEHOLDER.sub(one, text)


def resolve_command(command: str, env: Mapping[str, str] | None = None) -> str:
    """The executable for ``command``: a path as given, else the project's installed servers'
    folder first, then the running Python's scripts folder (``loopbench-mcp``), then PATH."""
    if os.sep in command:
        return command
    scripts = str(Path(sys.executable).parent)  # this environment's own entry points
    path = os.pathsep.join([str(MCP_BIN), scripts, (env or os.environ).get("PATH", "")])
    found = shutil.which(command, path=path)
    if found is None:
        raise ToolServerFailed(
            f"cannot start MCP server command {command!r}: not found in {MCP_BIN} or on PATH "
            "(make mcp-servers installs the servers the task sources use)"
        )
    return found


def schema_hash(schema: Mapping[str, Any]) -> str:
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass
class ServerRecord:
    """What a run's record keeps of one server: its name in the config, what it calls itself
    and its version (``serverInfo``), and each offered tool's schema hash (by offered name)."""

    name: str
    server_name: str | None = None
    server_version: str | None = None
    tools: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Servers:
    """The servers of one run, started: their tools, and what the record keeps of them."""

    tools: list[Tool]
    records: list[ServerRecord]


def _stderr_tail(path: Path, limit: int = 600) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4 * limit))
            text = log.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    return f"; its stderr ends: {text[-limit:]}" if text else ""


def _said(value: object) -> str | None:
    """What a server says of itself (``serverInfo``), as a record keeps it: cut to a line."""
    return None if value is None else str(value)[:INFO_CAP_CHARS]


def tool_text(result: Any) -> str:
    """A ``tools/call`` result as the text the model reads: its text blocks, and what a block
    that is not text holds, described (the loop carries text only)."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(str(block.resource.text))
        elif kind in ("image", "audio"):
            data = str(getattr(block, "data", ""))  # base64
            size = len(data) * 3 // 4 - data[-2:].count("=")
            mime = getattr(block, "mime_type", "?")
            parts.append(f"[{kind} ({mime}, about {size} bytes): not shown, this loop reads text]")
        elif kind == "resource_link":
            parts.append(f"[a link to {getattr(block, 'uri', '?')}]")
        else:
            parts.append(f"[a {kind or 'block'} result: not shown, this loop reads text]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > RESULT_CAP_CHARS:
        text = text[:RESULT_CAP_CHARS]
    return text


def _offered_name(server: str, tool: str, prefixed: bool) -> str:
    name = f"{server}__{tool}" if prefixed else tool
    return _NAME.sub("_", name)[:64]


def _check_schema(server: str, tool: Any) -> dict[str, Any]:
    schema = tool.input_schema
    where = f"MCP server {server!r} declares tool {tool.name!r} with an invalid input schema"
    size = len(json.dumps(schema))
    if size > SCHEMA_CAP_BYTES:
        raise ToolServerFailed(f"{where}: {size} bytes, over the cap of {SCHEMA_CAP_BYTES}")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ToolServerFailed(f"{where}: its root is not of type object")
    problem = schema_problem(schema)
    if problem is not None:
        raise ToolServerFailed(f"{where}: {problem}")
    return dict(schema)


def _as_tool(
    server: str,
    session: ClientSession,
    tool: Any,
    offered: str,
    stderr: Path,
    vouched: bool,
) -> tuple[Tool, str]:
    schema = _check_schema(server, tool)
    annotations = tool.annotations
    read_only = vouched or bool(annotations and annotations.read_only_hint)

    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            # The loop's tool timeout bounds a call (a hang is the server's fault there).
            result = await session.call_tool(tool.name, args, read_timeout_seconds=CALL_READ_S)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # the connection broke or the server answered out of protocol
            raise ToolServerFailed(
                f"MCP server {server!r} failed on {tool.name}: "
                f"{exc.__class__.__name__}: {exc}{_stderr_tail(stderr)}"
            ) from exc
        text = tool_text(result)
        if getattr(result, "is_error", False):
            raise ToolError(text or f"{tool.name} failed (the server gave no reason)")
        return text

    description = (tool.description or tool.title or tool.name)[:DESCRIPTION_CAP_CHARS]
    made = Tool(
        offered,
        description,
        schema,
        call,
        read_only=read_only,
        needs_approval=not read_only,
        hang_is_fault=True,
    )
    return made, schema_hash(schema)


async def _start(
    stack: AsyncExitStack,
    name: str,
    config: ServerConfig,
    values: Mapping[str, str],
    stderr: Path,
    timeout_s: float,
) -> tuple[ClientSession, ServerRecord, list[Any]]:
    """The server started, initialized and its tools listed, each answer awaited at most
    ``timeout_s`` (the session's own read timeout: a scope of ours around it could not be
    left while the transport's task group stays open)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: fill(v, values) for k, v in config.env.items()}
    # Through the relay (harness.mcp.relay): each message and the stderr log under a cap.
    relay = ["-I", "-m", "harness.mcp.relay", str(MESSAGE_CAP_BYTES), str(STDERR_CAP_BYTES)]
    command = [resolve_command(config.command), *[fill(a, values) for a in config.args]]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*relay, "--", *command],
        env=env or None,
        cwd=fill(config.cwd, values) if config.cwd else values.get("workspace"),
    )
    errlog = stack.enter_context(open(stderr, "w", encoding="utf-8"))  # noqa: SIM115
    try:
        streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        read, write = streams[0], streams[1]
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=timeout_s)
        )
        init = await session.initialize()
        listed = await session.list_tools()
    except ToolServerFailed:
        raise
    except Exception as exc:
        raise ToolServerFailed(
            f"MCP server {name!r} ({config.command}) did not start: "
            f"{exc.__class__.__name__}: {exc}{_stderr_tail(stderr)}"
        ) from exc
    info = getattr(init, "server_info", None)
    record = ServerRecord(
        name, _said(getattr(info, "name", None)), _said(getattr(info, "version", None))
    )
    return session, record, list(listed.tools)


@asynccontextmanager
async def open_servers(
    configs: Mapping[str, ServerConfig],
    values: Mapping[str, str],
    logs: Path,
    start_timeout_s: float = START_TIMEOUT_S,
) -> AsyncIterator[Servers]:
    """Start every server of ``configs`` (placeholders filled from ``values``; each server's
    stderr kept in ``logs``), list their tools, and yield them as the run's tools; the servers
    are stopped on the way out, whatever happened. A server that does not start and list its
    tools within ``start_timeout_s`` (each answer) raises ToolServerFailed."""
    logs.mkdir(parents=True, exist_ok=True)
    prefixed = len(configs) > 1
    try:
        async with AsyncExitStack() as stack:
            tools: list[Tool] = []
            records: list[ServerRecord] = []
            for name, config in configs.items():
                stderr = logs / f"{_NAME.sub('_', name)}.stderr"
                session, record, listed = await _start(
                    stack, name, config, values, stderr, start_timeout_s
                )
                if len(listed) > TOOLS_CAP:
                    raise ToolServerFailed(
                        f"MCP server {name!r} lists {len(listed)} tools, over the cap of "
                        f"{TOOLS_CAP}: name the ones to offer with allow"
                    )
                for tool in listed:
                    if not config.offers(tool.name):
                        continue
                    offered = _offered_name(name, tool.name, prefixed)
                    vouched = tool.name in config.read_only
                    made, digest = _as_tool(name, session, tool, offered, stderr, vouched)
                    if any(t.name == made.name for t in tools):
                        raise ToolServerFailed(f"two MCP tools are offered as {made.name!r}")
                    tools.append(made)
                    record.tools[made.name] = digest
                records.append(record)
            yield Servers(tools, records)
    except BaseExceptionGroup as group:
        raise _one_of(group) from None


def _one_of(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one exception a transport's task group wrapped (what the caller raised or the
    server's failure), or the group when there were several."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for inner in e.exceptions:
                walk(inner)
        else:
            leaves.append(e)

    walk(group)
    return leaves[0] if len(leaves) == 1 else group
