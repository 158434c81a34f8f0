"""The tool catalogue: four tools over a workspace folder.

A tool raises :class:`~harness.errors.ToolError` for anything the model should read and act
on; any other exception is a bug in the tool and is reported as such.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema.exceptions import best_match

from harness.cancel import CancelToken
from harness.errors import InvalidArguments, ToolError, ToolServerFailed
from harness.schemas import SchemaFault, validator_for
from harness.workspace import Workspace


def _ignore_progress(_: str) -> None:
    return None


@dataclass
class ToolContext:
    workspace: Workspace
    cancel: CancelToken = field(default_factory=CancelToken)
    progress: Callable[[str], None] = _ignore_progress
    # Run id + call id: the same logical operation always carries the same key.
    idempotency_key: str | None = None
    # What subagent runs started by this call spent; the parent records it apart from its own.
    child_costs: list[float] = field(default_factory=list)
    # What the tool reports about its own run, as data (a query's rows, whether it timed
    # out): saved with the call's record and traced, never read back from the result's text.
    facts: dict[str, Any] = field(default_factory=dict)
    # The run's settings (LoopConfig.settings): a tool reads its own limits here.
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The id of the call being answered, as the model gave it (a tool that keeps a transcript
    # of its own names each result by it).
    call_id: str = ""


ToolFn = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: ToolFn
    read_only: bool
    needs_approval: bool = False
    # False: a key the parameters do not declare is refused before the tool runs, whatever the
    # schema says of additional properties (a tool whose backend turns keys into code).
    extra_keys: bool = True
    # True: the tool is a server's (an MCP server's), and a call that outlives the tool timeout
    # means the server hung: the machinery's fault, so the run ends as an error
    # (ToolServerFailed) instead of the model reading that the call timed out.
    hang_is_fault: bool = False
    # True: the calls of one reply run one after the other, in the order asked, whenever one of
    # them is to this tool (an environment that replays its calls in order, as τ²'s does).
    in_order: bool = False
    # True: the tool's environment judges its arguments by its own rules (τ²'s runs the call
    # as it is and answers in its own words): the arguments, read as a JSON object, go to it
    # unchecked against ``parameters``.
    judges_arguments: bool = False

    def spec(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return await self.fn(args, ctx)


_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_PATH_ARG: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "File name inside the workspace"}},
    "required": ["path"],
    "additionalProperties": False,
}


LIST_TOOL = "list_files"
READ_TOOL = "read_file"
# One line of list_files' result per file: "NAME  SIZE bytes" (a name may hold spaces). The
# scripted provider reads it as a model would, with a reading of its own (serve_local never
# imports the harness); tests/test_scenarios.py checks the two agree.
LISTED_LINE = re.compile(r"^(\S.*?)  (\d+) bytes$")


def listed_line(name: str, size: int) -> str:
    return f"{name}  {size} bytes"


def listed_sizes(result: str) -> dict[str, int]:
    """The files a list_files result shows, in its order, with their sizes in bytes."""
    found = (LISTED_LINE.match(line.strip()) for line in result.splitlines())
    return {m.group(1): int(m.group(2)) for m in found if m}


def listed_names(result: str) -> list[str]:
    """The file names a list_files result shows, in its order."""
    return list(listed_sizes(result))


async def list_files(_: dict[str, Any], ctx: ToolContext) -> str:
    sizes = ctx.workspace.sizes()
    if not sizes:
        return "The workspace is empty."
    return "\n".join(listed_line(name, size) for name, size in sizes.items())


# The most read_file reads of one file (256 KB); a longer file is cut there and the result says
# so. It leaves room for that note under the loop's cap on any result (256 KiB, LoopConfig).
READ_CAP_BYTES = 256_000


def read_bounded(path: Path, cap: int = READ_CAP_BYTES) -> str:
    """At most ``cap`` bytes of ``path`` as text, the cut stated; a file that is not text
    (a NUL byte, or bytes that are not UTF-8) is described, not shown."""
    with open(path, "rb") as f:
        data = f.read(cap + 1)
        size = os.fstat(f.fileno()).st_size
    shown = data[:cap]
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut can fall inside a character; only an error before the last 3 bytes is binary.
        if len(data) <= cap or exc.start < len(shown) - 3:
            return _binary(path.name, size)
        text = shown[: exc.start].decode("utf-8")
    if "\x00" in text:
        return _binary(path.name, size)
    if len(data) > cap:
        text += f"\n[cut: {path.name} is {size} bytes; only the first {len(shown)} bytes were read]"
    return text


def _binary(name: str, size: int) -> str:
    return f"{name} is a binary file ({size} bytes), not text; its bytes are not shown."


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.workspace.existing(args.get("path", ""))
    # In a worker thread, so the loop keeps its ticks and the tool timeout can fire.
    return await asyncio.to_thread(read_bounded, path)


LEDGER = ".ledger.json"


def _ledger(ctx: ToolContext) -> dict[str, str]:
    path = ctx.workspace.root / LEDGER
    if not path.exists():
        return {}
    data: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _record(ctx: ToolContext, key: str, result: str) -> None:
    ledger = _ledger(ctx)
    ledger[key] = result
    tmp = ctx.workspace.root / (LEDGER + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(ledger, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, ctx.workspace.root / LEDGER)


async def delete_file(args: dict[str, Any], ctx: ToolContext) -> str:
    key = ctx.idempotency_key
    if key is not None and key in _ledger(ctx):
        return _ledger(ctx)[key]
    # The name asked for goes, not what it may link to: a person approved deleting that name.
    path = ctx.workspace.entry(args.get("path", ""))
    path.unlink()
    result = f"deleted {path.name}"
    if key is not None:
        _record(ctx, key, result)
    return result


ARCHIVE_FILES = 1200
ARCHIVE_STEP = 200
ARCHIVE_SECONDS = 3.0


async def scan_archive(_: dict[str, Any], ctx: ToolContext) -> str:
    """Slow on purpose; reports progress and stops as soon as the token fires."""
    pause = ARCHIVE_SECONDS * ARCHIVE_STEP / ARCHIVE_FILES
    for done in range(ARCHIVE_STEP, ARCHIVE_FILES + 1, ARCHIVE_STEP):
        await ctx.cancel.sleep(pause)
        ctx.progress(f"scanned {done} of {ARCHIVE_FILES} files")
    return f"scanned {ARCHIVE_FILES} files: no corrupt entries found."


def default_tools() -> list[Tool]:
    return [
        Tool(
            LIST_TOOL,
            "List the files in the workspace with their sizes in bytes.",
            _NO_ARGS,
            list_files,
            read_only=True,
        ),
        Tool(
            READ_TOOL,
            "Read a text file from the workspace.",
            _PATH_ARG,
            read_file,
            read_only=True,
        ),
        Tool(
            "delete_file",
            "Delete a file from the workspace. Needs a person's approval.",
            _PATH_ARG,
            delete_file,
            read_only=False,
            needs_approval=True,
        ),
        Tool(
            "scan_archive",
            "Scan the log archive for corrupt entries. Slow: takes a few seconds.",
            _NO_ARGS,
            scan_archive,
            read_only=True,
        ),
    ]


def check_arguments(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` if the tool's JSON Schema accepts them (and, for a tool that takes no extra
    keys, only keys it declares); else why not, for the model to read."""
    if not tool.extra_keys:
        declared = tool.parameters.get("properties") or {}
        unknown = [k for k in args if k not in declared]
        if unknown:
            raise InvalidArguments(
                f"the arguments do not fit {tool.name}'s parameters: {unknown[0]!r} is not one "
                f"of them (they are: {', '.join(declared) or 'none'})."
            )
    try:
        problem = best_match(validator_for(tool.parameters).iter_errors(args))
    except Exception as exc:  # the schema's own failure (a pattern out of time, a bad $ref)
        raise ToolServerFailed(
            f"{tool.name}'s schema cannot be applied to a call: "
            f"{exc if isinstance(exc, SchemaFault) else f'{exc.__class__.__name__}: {exc}'}"
        ) from exc
    if problem is None:
        return args
    where = "/".join(str(p) for p in problem.absolute_path)
    raise InvalidArguments(
        f"the arguments do not fit {tool.name}'s parameters"
        f"{f' at {where}' if where else ''}: {problem.message}."
    )


# How deep the arguments of a tool that judges its own (``Tool.judges_arguments``) may nest:
# deeper than any tool's parameters go, shallow enough for the code behind it to walk.
MAX_DEPTH = 32


class ToolTable(dict[str, Tool]):
    """The run's tools by name. A call by a name no tool has is answered by the tool
    ``unknown(name)`` gives, where the environment gives one (τ²: its own environment answers
    it, as its runner lets it, in its own words and in its trajectory); else by the loop,
    which names the tools there are."""

    def __init__(self, tools: list[Tool], unknown: Callable[[str], Tool] | None = None) -> None:
        super().__init__((t.name, t) for t in tools)
        self.unknown = unknown
        # The environment's tool for each unknown name asked, made once (the loop looks a
        # call's tool up several times); never a key, so the names offered stay the tools'.
        self._made: dict[str, Tool] = {}

    def get(self, name: str, default: Any = None) -> Any:
        found = super().get(name)
        if found is not None or self.unknown is None:
            return default if found is None else found
        if name not in self._made:
            self._made[name] = self.unknown(name)
        return self._made[name]


def check_depth(args: dict[str, Any], most: int = MAX_DEPTH) -> dict[str, Any]:
    """``args``, or why not: a structure nested past ``most`` levels, which a tool that takes
    arguments unchecked (or the judge replaying its calls) would recurse through."""
    level = 1
    frontier: list[Any] = [args]
    while frontier:
        if level > most:
            raise InvalidArguments(
                f"the arguments nest more than {most} levels deep; send a flatter object."
            )
        frontier = [
            child
            for value in frontier
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, (dict, list))
        ]
        level += 1
    return args


def parse_arguments(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"the arguments are not valid JSON ({exc.msg}); send a JSON object."
        ) from exc
    except RecursionError as exc:  # the JSON reader recurses once per level of brackets
        raise ToolError("the arguments nest too deeply to read; send a flat JSON object.") from exc
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object.")
    problem = unencodable(value)
    if problem is not None:
        raise InvalidArguments(f"{problem}; send plain text.")
    return value


def unencodable(value: Any, at: str = "") -> str | None:
    """Why ``value`` (JSON read from a model) cannot be written as UTF-8, or None. A JSON
    string may spell a lone surrogate (``"\\ud800"``): text no file, pipe or tool can carry,
    refused before any tool runs."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = f" at {at}" if at else ""
            return (
                f"the arguments hold a character that is not text{where} "
                f"(U+{ord(value[exc.start]):04X}, half of a surrogate pair)"
            )
        return None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        name = f"{at}/{key}" if at else str(key)
        problem = unencodable(key, at) if isinstance(key, str) else None
        problem = problem or unencodable(inner, name)
        if problem is not None:
            return problem
    return None
