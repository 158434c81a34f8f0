"""Tool schemas as the field writes them (``lab.conformance.tool_schemas``): pydantic shapes,
tau2's 72 tools, the community MCP servers' listed tools and BFCL's function documents. Every
one is accepted and compiles into the call grammar over the real vocabulary; through the real
server and the real model, forced calls of each shape come back as calls whose arguments the
schema as sent accepts, on the chat and the Messages route; a domain's whole set is accepted in
one request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from evals.bfcl.bridge import bfcl_python
from evals.tau2.bridge import tau2_python
from lab.conformance.tool_schemas import Entry, corpus, force, groups, offer_all
from serve_local.backends.llama import LlamaBackend, llama_vocabulary
from serve_local.models import QWEN_CODER, resolve
from serve_local.toolcalls import ToolSchemas
from serve_local.toolgrammar import CallGrammar, CallPolicy
from tests.models_fixtures import model_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (tau2_python().exists() and bfcl_python().exists()),
        reason="tau2's and BFCL's virtualenvs hold part of the corpus (`make test` makes them)",
    ),
]


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    return asyncio.run(corpus())


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with model_server(LlamaBackend(resolve(QWEN_CODER), n_ctx=8192)) as served:
        yield served


def test_the_corpus_is_what_it_says(entries: list[Entry]) -> None:
    found = {source: len(group) for source, group in groups(entries).items()}
    tau2 = sum(n for source, n in found.items() if source.startswith("tau2/"))
    assert tau2 == 72 and found["tau2/telecom/user"] == 30
    assert found["pydantic"] >= 7 and found["bfcl"] == 24
    assert {"mcp/git", "mcp/filesystem", "mcp/sqlite"} <= set(found)
    shapes = [json.dumps(e.parameters) for e in entries]
    assert sum("$defs" in s for s in shapes) >= 7  # tau2's five and pydantic's nested ones
    assert sum(not e.parameters.get("properties") for e in entries) >= 18


def test_every_schema_is_accepted_and_compiles_into_the_call_grammar(
    entries: list[Entry],
) -> None:
    """The server's own check takes each schema, and the call grammar over the real Qwen
    vocabulary compiles each one, alone and each group's whole set together, without falling
    back to an unconstrained object."""
    import llama_cpp

    llm = llama_cpp.Llama(str(resolve(QWEN_CODER).path), vocab_only=True, verbose=False)
    grammar = CallGrammar(llama_vocabulary(llm))
    refused = {e.name: ToolSchemas.check(e.parameters) for e in entries}
    assert {n: p for n, p in refused.items() if p is not None} == {}
    whole = []
    for entry in entries:
        constraint = grammar.constraint(
            CallPolicy({entry.name: entry.parameters}, entry.name, False)
        )
        whole += [(n.tool, n.detail) for n in constraint.loosened if n.keyword == "schema"]
    assert whole == []
    for group in groups(entries).values():
        tools = {e.name: e.parameters for e in group}
        assert grammar.constraint(CallPolicy(tools, "required", True)).allowed() is not None


def _shapes(entries: list[Entry]) -> list[Entry]:
    """One of each shape the corpus holds: every pydantic tool (the generator's shapes), a
    tau2 tool with nested `$defs` (telecom's APN settings; airline's, on the Messages route
    below), one without arguments, and the first of an MCP server and of BFCL. The whole
    corpus, forced on the default model, is `make tool-schemas` (docs/server.md)."""
    picked = [e for e in entries if e.source == "pydantic"]
    picked += [e for e in entries if e.name == "set_apn_settings"]
    bare = [
        e for e in entries if e.source.startswith("tau2/") and not e.parameters.get("properties")
    ]
    picked += bare[:1]
    for source in ("mcp/git", "bfcl"):
        picked.append(next(e for e in entries if e.source == source))
    return picked


def test_a_forced_call_of_each_shape_is_a_call_that_fits_its_schema(
    entries: list[Entry], url: str
) -> None:
    picked = _shapes(entries)

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return [await force(client, url, "m", entry) for entry in picked]

    rows = asyncio.run(run())
    misses = [(r.source, r.tool, r.status, r.problem) for r in rows if not r.valid]
    assert misses == []
    assert len(rows) == 11


def test_a_forced_call_on_the_messages_route_fits_a_schema_with_defs(
    entries: list[Entry], url: str
) -> None:
    (entry,) = [e for e in entries if e.name == "update_reservation_passengers"]
    body = {
        "model": "m",
        "max_tokens": 384,
        "messages": [{"role": "user", "content": f"Call {entry.name}."}],
        "tools": [
            {
                "name": entry.name,
                "description": entry.tool["function"]["description"],
                "input_schema": entry.parameters,
            }
        ],
        "tool_choice": {"type": "tool", "name": entry.name},
    }
    reply = httpx.post(f"{url.removesuffix('/v1')}/v1/messages", json=body, timeout=600).json()
    (used,) = [b for b in reply["content"] if b["type"] == "tool_use"]
    assert reply["stop_reason"] == "tool_use" and used["name"] == entry.name
    jsonschema.validate(used["input"], entry.parameters)


def test_a_domains_whole_tool_set_is_accepted_in_one_request(
    entries: list[Entry], url: str
) -> None:
    """tau2's airline set, sent with every agent turn: once a 400 for its $defs."""

    async def run() -> Any:
        async with httpx.AsyncClient() as client:
            airline = [e for e in entries if e.source == "tau2/airline/agent"]
            return await offer_all(client, url, "m", airline)

    offered = asyncio.run(run())
    assert (offered.status, offered.tools, offered.problem) == (200, 14, "")


def test_a_keyword_the_grammar_cannot_express_is_named_in_the_reply_and_the_call_comes_back(
    url: str,
) -> None:
    """A look-ahead pattern is beyond the grammar: the reply says so beside its timings (chat
    and Messages routes), and the forced call is still a call, its shape otherwise held."""
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(?=.*[0-9])[a-z0-9]{4,8}$"}},
        "required": ["code"],
    }
    tool = {"type": "function", "function": {"name": "redeem", "parameters": schema}}
    body = {
        "model": "m",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Redeem the code abc123."}],
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "redeem"}},
    }
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=600).json()
    assert [(n["tool"], n["keyword"]) for n in reply["grammar_loosened"]] == [("redeem", "pattern")]
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert set(json.loads(call["function"]["arguments"])) == {"code"}
    messages = {
        "model": "m",
        "max_tokens": 64,
        "messages": body["messages"],
        "tools": [{"name": "redeem", "input_schema": schema}],
        "tool_choice": {"type": "tool", "name": "redeem"},
    }
    said = httpx.post(f"{url.removesuffix('/v1')}/v1/messages", json=messages, timeout=600).json()
    assert [n["keyword"] for n in said["grammar_loosened"]] == ["pattern"]
    assert [b["type"] for b in said["content"]] == ["tool_use"]
