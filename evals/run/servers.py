"""The servers an eval talks to (each a ``Server`` that ``evals.run.discovery`` found): how
many task runs are in flight and each server's share (``limited``), what ran as the servers say
it (``served_spec``, the serving part of a run's ``RunSpec``, with how it is priced), and a pool
that spreads requests over the servers of one model, each bounded to its own concurrency.

Batching and scheduling are the serving engine's job (llama-server's slots, vLLM); the pool
only decides which server gets the next request and how many each has in flight.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from evals.errors import EvalError
from evals.record import RunSpec, code_version, machine
from evals.run.discovery import Server
from harness.cancel import CancelToken
from harness.client import ModelReply, ProviderClient, TurnOptions
from harness.keys import KeyFrom, key_from
from harness.prices import Prices, list_price
from harness.providers import provider


def servers_for(servers: list[Server], model: str | None) -> list[Server]:
    """The servers that serve ``model`` (the first server's first model when None)."""
    if model is None:
        model = str(servers[0].entries[0]["id"])
    chosen = [s for s in servers if s.serves(model)]
    if not chosen and len(servers) == 1:
        return servers  # a server that takes any model name (the scripted one lists scenarios)
    if not chosen:
        offered = sorted({str(e.get("id")) for s in servers for e in s.entries})
        raise EvalError(f"no server serves {model!r}; they serve: {', '.join(offered)}")
    return chosen


@dataclass(frozen=True)
class Serving:
    """Where an eval's requests go: the servers (``base_url`` and any beside it, each request
    going to one serving the model), the model asked for (None: the first server's first), the
    wire shape (``openai``: chat completions; ``anthropic``: Messages), the task runs in flight
    across every model of one command (None: as many as the servers have slots) and the
    requests in flight per server (None: spread evenly)."""

    base_url: str
    more_base_urls: tuple[str, ...] = ()
    model: str | None = None
    api: str = "openai"
    concurrency: int | None = None
    per_server: int | None = None
    # The environment variable the servers' key is read from (None: the shape's usual one,
    # when it is set); its name only: a key is never kept.
    api_key_env: str | None = None

    def key(self) -> KeyFrom:
        return key_from(self.api, self.api_key_env, base_url=self.base_url)

    @property
    def base_urls(self) -> list[str]:
        return [self.base_url, *self.more_base_urls]

    def check(self) -> None:
        if self.concurrency is not None and self.concurrency < 1:
            raise EvalError("--concurrency must be at least 1")
        if self.per_server is not None and self.per_server < 1:
            raise EvalError("--max-connections must be at least 1")

    def limited(self, groups: Sequence[Sequence[Server]]) -> int:
        """The task runs in flight, each server's limit raised to its share (:func:`limited`)."""
        return limited(self.concurrency, self.per_server, groups)


def share(concurrency: int, servers: int, per_server: int | None) -> int:
    """Requests in flight per server: as given, else the eval's concurrency spread evenly."""
    return per_server if per_server else max(1, math.ceil(concurrency / max(1, servers)))


def in_flight(concurrency: int | None, servers: Sequence[Server]) -> int:
    """Task runs in flight: as given, else as many as the servers decode at once together
    (``make serve-local SLOTS=4`` is kept full without a flag)."""
    if concurrency is not None:
        return concurrency
    return sum(s.slots for s in {s.base_url: s for s in servers}.values())


def limited(
    concurrency: int | None, per_server: int | None, groups: Sequence[Sequence[Server]]
) -> int:
    """The task runs in flight (``in_flight`` over every server), with each server's limit
    raised to its share of them: ``per_server`` where given, else the runs spread evenly over
    the servers of its group (one model's), else, with neither given, its own slots."""
    total = in_flight(concurrency, [s for group in groups for s in group])
    for group in groups:
        for server in group:
            wanted = share(total, len(group), per_server)
            if concurrency is None and per_server is None:
                wanted = server.slots  # each server kept as full as it has slots
            server.limit = max(server.limit, wanted)
    return total


@dataclass
class ServerPool:
    """The requests of one command and a client per server. A request goes to the least busy
    server with room among those serving its model, preferring the one that answered the
    task's previous turn (its prompt cache holds the prefix)."""

    api: str = "openai"
    _clients: dict[str, ProviderClient] = field(default_factory=dict)  # by URL, shape and key
    # Set when a server gets room; the waiters then look again (one event loop: between two
    # awaits nobody else changes ``busy``, so no lock is needed).
    _room: asyncio.Event = field(default_factory=asyncio.Event)

    def client(self, server: Server) -> ProviderClient:
        """The server's client: one per URL, wire shape and key (the agent's and the user's
        may share a URL and not a key)."""
        which = f"{server.api} {server.base_url} {server.key.env}"
        if which not in self._clients:
            self._clients[which] = provider(server.api, server.base_url, key=server.key)
        return self._clients[which]

    @asynccontextmanager
    async def slot(
        self,
        candidates: Sequence[Server],
        prefer: Server | None = None,
        cancel: CancelToken | None = None,
    ) -> AsyncIterator[Server]:
        """A server with room, once one has it; the token ends the wait (:class:`Cancelled`)."""
        while not (free := [s for s in candidates if s.busy < s.limit]):
            await self._room_or(cancel)
        chosen = prefer if prefer in free else min(free, key=lambda s: (s.busy, s.requests))
        chosen.busy += 1
        chosen.requests += 1
        try:
            yield chosen
        finally:
            chosen.busy -= 1
            self._room.set()
            self._room = asyncio.Event()

    async def _room_or(self, cancel: CancelToken | None) -> None:
        if cancel is None:
            await self._room.wait()
            return
        cancel.raise_if_cancelled()
        waits = [asyncio.ensure_future(self._room.wait()), asyncio.ensure_future(cancel.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        cancel.raise_if_cancelled()

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


class PooledClient:
    """What one task's loop talks to: each turn goes to a server of the pool."""

    def __init__(self, pool: ServerPool, servers: Sequence[Server]) -> None:
        self.pool = pool
        self.servers = servers
        self.last: Server | None = None
        self.answered: list[str] = []  # the base URL that answered each turn
        # Time the task's turns waited for a server with room (the eval's queue, not the
        # model's time); a wait the cancellation token ended counts too.
        self.queue_ms = 0.0

    @property
    def api(self) -> str:
        return self.pool.api

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: CancelToken | None = None,
        options: TurnOptions | None = None,
    ) -> ModelReply:
        async with AsyncExitStack() as stack:
            asked = time.perf_counter()
            try:
                slot = self.pool.slot(self.servers, self.last, cancel)
                server = await stack.enter_async_context(slot)
            finally:
                self.queue_ms += (time.perf_counter() - asked) * 1000
            reply = await self.pool.client(server).chat(model, messages, tools, cancel, options)
        self.last = server
        self.answered.append(server.base_url)
        return reply


def model_entry(servers: list[Server], requested: str | None) -> dict[str, Any]:
    """The model's /v1/models entry; servers that disagree on its weights are an error."""
    entries = [s.entry(requested) for s in servers]
    weights = {e.get("sha256") for e in entries} - {None}
    if len(weights) > 1:
        pairs = zip(servers, entries, strict=True)
        listed = ", ".join(f"{s.base_url}: {e.get('sha256')}" for s, e in pairs)
        raise EvalError(f"the servers of {entries[0]['id']!r} serve different weights ({listed})")
    return entries[0]


def served_spec(
    servers: list[Server], requested: str | None, label: str | None, shape: str = "", **ran: Any
) -> RunSpec:
    """What ran, as the servers of the model say it (its weights, backend, tool grammar and
    draft), with ``ran``: what the eval or the BFCL run fixes besides. Its label, when none is
    given, is ``MODEL@BACKEND`` and the wire ``shape`` when it is not OpenAI's."""
    info = model_entry(servers, requested)
    model = str(info["id"])
    backend = info.get("backend") or servers[0].kind  # a server not ours names no backend
    priced = price_of(servers, model)
    if priced is not None:
        ran = {**ran, "prices": priced}
    return RunSpec(
        label=label or f"{model}@{backend}{shape}",
        model=model,
        model_sha256=info.get("sha256"),
        backend=backend,
        # How the server decodes tool calls (serve_local's --tool-grammar), when it says.
        tool_grammar=info.get("tool_grammar"),
        # Speculative decoding (serve_local's --draft), when the server says.
        draft=info.get("draft"),
        slots=max(s.slots for s in servers) if any(s.slots > 1 for s in servers) else None,
        base_url=servers[0].base_url,
        servers=[{"base_url": s.base_url, "software": s.software} for s in servers],
        machine=machine(),
        code_version=code_version(),
        **ran,
    )


def price_of(servers: Sequence[Server], model: str) -> dict[str, Any] | None:
    """How the runs of ``model`` on ``servers`` are priced, where it is not the loop's list
    price: a hosted model at its provider's list price (``source``: the price table's name for
    it), or ``unknown`` where the table does not know it. None: served locally."""
    if all(s.local for s in servers):
        return None
    found = list_price(model)
    if found is None:
        return {"source": "unknown"}
    name, prices = found
    return {
        "input_per_million": prices.input_per_million,
        "output_per_million": prices.output_per_million,
        "source": f"list price of {name}",
    }


def loop_prices(priced: dict[str, Any] | None, default: Prices) -> Prices:
    """The prices the loop applies: the list price ``priced`` names, the loop's own where it
    is None, nothing where the price is unknown (the record then says so: never 0)."""
    if priced is None:
        return default
    if priced.get("source") == "unknown":
        return Prices(0.0, 0.0)
    return Prices(float(priced["input_per_million"]), float(priced["output_per_million"]))
