"""Tool schemas as the field writes them, offered to a server one at a time with that tool
forced: is the request accepted, and does the reply hold one call whose arguments fit the
schema as sent?

The corpus is tools nobody here wrote, and the shapes their generators produce:

- ``pydantic``: the project's own generator of pydantic-shaped tools (nested models, enums,
  literals, optionals, unions, recursion, dicts, lists of models, bounds, a pattern), the way
  the Agents SDK's ``function_tool``, FastMCP and Inspect's typed tools write them;
- ``tau2/DOMAIN/SIDE``: tau2-bench's tools, the agent's and (telecom) the user's, as tau2's own
  ``openai_schema`` writes them (where its virtualenv is installed: ``make tau2-venv``);
- ``mcp/SERVER``: what the three community MCP servers list (``make mcp-servers``);
- ``bfcl``: BFCL's function documents as its OpenAI handler sends them, a seeded sample
  (``make bfcl-venv``).

A reply is judged by ``jsonschema`` against the schema exactly as sent; the argument *values*
may be silly, their *shape* may not. Each group's whole tool set is also offered in one request
(the way an agent sends them every turn): accepted or not.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from jsonschema import validators

from evals.bfcl.bridge import Checker
from evals.errors import EvalError
from evals.markdown import table
from evals.tau2.bridge import Tau2
from harness.mcp.config import ServerConfig
from harness.mcp.servers import open_servers
from lab.conformance import pydantic_tools

SOURCES = ("pydantic", "tau2", "mcp", "bfcl")
# A forced call's reply cap: the longest valid call of the corpus on the default model is far
# below it; a reply cut here is counted as no call.
MAX_TOKENS = 384
PROMPT = "Make one call of the tool {name}, with arguments that fit it."
# BFCL's single-turn categories the sample is drawn from (their function documents).
BFCL_CATEGORIES = ["simple_python", "multiple", "parallel", "live_simple", "live_multiple"]
BFCL_SAMPLE = 24
BFCL_SEED = 0


@dataclass(frozen=True)
class Entry:
    source: str  # pydantic | tau2/airline/agent | mcp/git | bfcl
    tool: dict[str, Any]  # an OpenAI tool: {"type": "function", "function": {...}}

    @property
    def name(self) -> str:
        return str(self.tool["function"]["name"])

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.tool["function"].get("parameters") or {})


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def pydantic_entries() -> list[Entry]:
    return [
        Entry("pydantic", _tool(name, model.__doc__ or name, model.model_json_schema()))
        for name, model in pydantic_tools.TOOLS.items()
    ]


async def tau2_entries() -> list[Entry]:
    entries = []
    async with Tau2() as tau2:
        for domain in ("airline", "retail", "telecom"):
            sides = await tau2.tools(domain)
            for side, tools in sides.items():
                entries += [Entry(f"tau2/{domain}/{side}", tool) for tool in tools]
    return entries


# The community servers as the MCP task sets start them; nothing is run, only listed.
MCP_SERVERS = {
    "git": ServerConfig(command="mcp-server-git", args=["--repository", "{workspace}"]),
    "filesystem": ServerConfig(command="mcp-server-filesystem", args=["{workspace}"]),
    "sqlite": ServerConfig(command="mcp-server-sqlite", args=["--db-path", "{database}"]),
}


async def mcp_entries() -> list[Entry]:
    entries = []
    with tempfile.TemporaryDirectory(prefix="loopbench-schemas-") as folder:
        workspace = Path(folder) / "workspace"
        workspace.mkdir()
        proc = await asyncio.create_subprocess_exec("git", "init", "-q", str(workspace))
        await proc.wait()
        values = {"workspace": str(workspace), "database": str(Path(folder) / "bank.sqlite")}
        for name, config in MCP_SERVERS.items():
            async with open_servers({name: config}, values, Path(folder) / "logs") as servers:
                entries += [
                    Entry(f"mcp/{name}", _tool(t.name, t.description, t.parameters))
                    for t in servers.tools
                ]
    return entries


async def bfcl_entries(n: int = BFCL_SAMPLE, seed: int = BFCL_SEED) -> list[Entry]:
    """``n`` distinct function documents of BFCL's single-turn categories, drawn with ``seed``
    from every tool those items offer (in the order BFCL lists them)."""
    async with Checker() as checker:
        loaded = await checker.load(BFCL_CATEGORIES)
    seen: dict[str, dict[str, Any]] = {}
    for item in loaded["items"]:
        for tool in item["tools"]:
            seen.setdefault(tool["function"]["name"], tool)
    names = sorted(seen)
    drawn = random.Random(seed).sample(names, min(n, len(names)))
    return [Entry("bfcl", seen[name]) for name in drawn]


async def corpus(sources: Sequence[str] = SOURCES) -> list[Entry]:
    makers: dict[str, Callable[[], Any]] = {
        "pydantic": pydantic_entries,
        "tau2": tau2_entries,
        "mcp": mcp_entries,
        "bfcl": bfcl_entries,
    }
    entries: list[Entry] = []
    for source in sources:
        if source not in makers:
            raise EvalError(f"no schema source {source!r}; the sources are {', '.join(SOURCES)}")
        made = makers[source]()
        entries += (await made) if asyncio.iscoroutine(made) else made
    return entries


@dataclass
class Forced:
    """One tool offered alone and forced: what the server answered."""

    source: str
    tool: str
    status: int  # HTTP status
    call: bool = False  # the reply holds a call of that tool
    valid: bool = False  # ... whose arguments the schema as sent accepts
    problem: str = ""  # why not, when not
    finish: str = ""
    completion_tokens: int = 0
    ms: float = 0.0
    loosened: list[str] = field(default_factory=list)  # keywords the server said it loosened
    arguments: str = ""  # as the reply gave them (cut)


def _loosened(body: dict[str, Any]) -> list[str]:
    return [f"{n.get('tool')}: {n.get('keyword')}" for n in body.get("grammar_loosened") or []]


def judge(entry: Entry, status: int, body: dict[str, Any], ms: float) -> Forced:
    row = Forced(entry.source, entry.name, status, ms=round(ms, 1))
    if status != 200:
        row.problem = str((body.get("error") or {}).get("message") or body)[:300]
        return row
    choice = body["choices"][0]
    row.finish = str(choice.get("finish_reason"))
    row.completion_tokens = int((body.get("usage") or {}).get("completion_tokens") or 0)
    row.loosened = _loosened(body)
    calls = choice["message"].get("tool_calls") or []
    if len(calls) != 1 or calls[0]["function"]["name"] != entry.name:
        text = str(choice["message"].get("content") or "")
        row.problem = f"{len(calls)} calls; text: {text[:200]!r}"
        return row
    row.call = True
    row.arguments = str(calls[0]["function"]["arguments"])[:300]
    try:
        args = json.loads(calls[0]["function"]["arguments"])
    except json.JSONDecodeError as exc:
        row.problem = f"arguments are not JSON: {exc}"
        return row
    schema = entry.parameters
    errors = list(validators.validator_for(schema)(schema).iter_errors(args))
    row.valid = not errors and isinstance(args, dict)
    row.problem = errors[0].message[:300] if errors else ""
    return row


def forced_body(entry: Entry, model: str, choice: str) -> dict[str, Any]:
    tool_choice: Any = "required"
    if choice == "named":
        tool_choice = {"type": "function", "function": {"name": entry.name}}
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT.format(name=entry.name)}],
        "tools": [entry.tool],
        "tool_choice": tool_choice,
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }


async def force(
    client: httpx.AsyncClient, url: str, model: str, entry: Entry, choice: str = "named"
) -> Forced:
    started = time.perf_counter()
    response = await client.post(
        f"{url}/chat/completions", json=forced_body(entry, model, choice), timeout=900
    )
    try:
        body = response.json()
    except ValueError:
        body = {"error": {"message": response.text[:300]}}
    return judge(entry, response.status_code, body, (time.perf_counter() - started) * 1000)


@dataclass
class Offered:
    """A group's whole tool set in one request: accepted or not."""

    source: str
    tools: int
    status: int
    problem: str = ""
    loosened: list[str] = field(default_factory=list)


async def offer_all(
    client: httpx.AsyncClient, url: str, model: str, entries: list[Entry]
) -> Offered:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Which of these tools would you use first?"}],
        "tools": [e.tool for e in entries],
        "tool_choice": "auto",
        "max_tokens": 1,
        "temperature": 0,
    }
    response = await client.post(f"{url}/chat/completions", json=body, timeout=900)
    answer = (
        response.json()
        if response.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    row = Offered(entries[0].source, len(entries), response.status_code, loosened=_loosened(answer))
    if response.status_code != 200:
        row.problem = str((answer.get("error") or {}).get("message") or response.text)[:300]
    return row


def groups(entries: list[Entry]) -> dict[str, list[Entry]]:
    found: dict[str, list[Entry]] = {}
    for entry in entries:
        found.setdefault(entry.source, []).append(entry)
    return found


async def run_corpus(
    url: str,
    model: str,
    entries: list[Entry],
    choice: str = "named",
    on_row: Callable[[Forced], None] | None = None,
) -> tuple[list[Forced], list[Offered]]:
    """Each entry forced alone, then each group's whole set offered at once."""
    forced: list[Forced] = []
    async with httpx.AsyncClient() as client:
        for entry in entries:
            row = await force(client, url, model, entry, choice)
            forced.append(row)
            if on_row is not None:
                on_row(row)
        offered = [await offer_all(client, url, model, group) for group in groups(entries).values()]
    return forced, offered


def write(
    path: Path, label: str, meta: dict[str, Any], forced: list[Forced], offered: list[Offered]
) -> None:
    """One JSON file: what ran, every forced reply, every whole set."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "label": label,
        **meta,
        "forced": [asdict(r) for r in forced],
        "offered": [asdict(r) for r in offered],
    }
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _family(source: str) -> str:
    return (
        source.split("/")[0] if not source.startswith("tau2/") else "/".join(source.split("/")[:2])
    )


def summary_table(runs: list[dict[str, Any]]) -> str:
    """Per source family and server: schemas accepted, forced calls made, calls valid."""
    families = sorted({_family(r["source"]) for run in runs for r in run["forced"]})
    rows = []
    for family in [*families, "all"]:
        row: list[Any] = [family if family != "all" else "**all**"]
        for run in runs:
            picked = [r for r in run["forced"] if family == "all" or _family(r["source"]) == family]
            n = len(picked)
            row += [
                f"{sum(r['status'] == 200 for r in picked)}/{n}",
                f"{sum(r['call'] for r in picked)}/{n}",
                f"{sum(r['valid'] for r in picked)}/{n}",
            ]
        rows.append(row)
    head = ["schemas"] + [
        f"{run['label']} {what}" for run in runs for what in ("accepted", "call", "valid")
    ]
    return table(head, rows)


def sets_table(runs: list[dict[str, Any]]) -> str:
    """Each group's whole tool set in one request: the status each server answered."""
    sources = [o["source"] for o in runs[0]["offered"]]
    rows = []
    for source in sources:
        row: list[Any] = [source]
        for run in runs:
            found = next((o for o in run["offered"] if o["source"] == source), None)
            row.append("–" if found is None else f"{found['status']} ({found['tools']} tools)")
        rows.append(row)
    return table(["tool set", *[run["label"] for run in runs]], rows)


def misses(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in run["forced"] if not r["valid"]]
