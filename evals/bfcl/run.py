"""BFCL through this stack: a run of single-turn items (``evals.bfcl.single``: each one
request through the project's client to any OpenAI-shaped server, the item's functions as
tools, ``tool_choice`` left to the server's default, greedy) or of multi-turn conversations
(``evals.bfcl.multi``: each through the agent loop), judged by BFCL's own checker in its own
process.

Records go to ``RUN_FILE.partial`` as each item is judged (fsynced), through the driver every
eval runs on (``evals.run.driver``); the run file appears, in BFCL's order, when every item has
a record. ``--resume RUN_FILE.partial`` goes on with an
interrupted run: its settings come from its records, and only the items without one are asked.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.bfcl.bridge import Checker
from evals.bfcl.items import (
    CATEGORIES,
    DEFAULT_CATEGORIES,
    MULTI_TURN,
    Item,
    bfcl_result,
    sample,
)
from evals.bfcl.multi import Entry, conversation_key, entry_record, judge, loop_settings
from evals.bfcl.single import ask, item_record
from evals.errors import EvalError
from evals.record import PresetRecord, RunSpec
from evals.record.bfcl import BfclRun, ItemRecord, header, read_items
from evals.run.discovery import Server, discover
from evals.run.driver import RunFile, drive
from evals.run.progress import Progress
from evals.run.runner import LOCAL, Summarize, default_out
from evals.run.servers import PooledClient, ServerPool, Serving, served_spec, servers_for
from harness.client import TurnOptions
from harness.policies.base import UnknownSetting
from harness.presets import PLAIN, preset
from harness.trace import Recorder

BFCL_RESULTS = LOCAL / "bfcl"
# What a resumed run must share with the records it keeps, beside the weights: one label, one
# configuration, one checker.
SAME_ON_RESUME = (
    ("tool_grammar", "tool grammar"),
    ("draft", "draft setting"),
    ("bfcl_eval", "bfcl-eval"),
    ("checker_model", "checker model entry"),
    ("preset", "preset"),
)


@dataclass(frozen=True)
class BfclSettings:
    serving: Serving  # where the items are asked (the wire shape is OpenAI's)
    categories: tuple[str, ...] = DEFAULT_CATEGORIES
    limit: int | None = None  # items per category; None: all
    seed: int = 0
    out: Path | None = None
    folder: Path = BFCL_RESULTS  # where the run file goes when ``out`` names none
    label: str | None = None
    checker_python: Path | None = None  # default: .venv-bfcl's (or $BFCL_PYTHON)
    max_tokens: int | None = None  # reply cap sent with each item; None: the server's default
    resume: Path | None = None  # the .partial file of an interrupted run, to go on with
    preset: str = PLAIN  # the preset the multi-turn conversations run under (--preset)

    @property
    def multi_turn(self) -> bool:
        return any(c in MULTI_TURN for c in self.categories)

    def check(self) -> None:
        unknown = [c for c in self.categories if c not in CATEGORIES]
        if unknown:
            raise EvalError(
                f"unknown BFCL categor{'y' if len(unknown) == 1 else 'ies'} "
                f"{', '.join(unknown)}; known: {', '.join(CATEGORIES)}"
            )
        if not self.categories:
            raise EvalError("name at least one BFCL category")
        self.serving.check()
        if self.serving.api != "openai":
            raise EvalError("BFCL's items are asked in the openai shape only")
        if self.limit is not None and self.limit < 1:
            raise EvalError("--limit must be at least 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise EvalError("--max-tokens must be at least 1")
        single = [c for c in self.categories if c not in MULTI_TURN]
        if self.multi_turn and single:
            raise EvalError(
                "multi-turn categories run as conversations through the agent loop, the others "
                f"as one request each: run {', '.join(single)} apart from "
                f"{', '.join(c for c in self.categories if c in MULTI_TURN)}"
            )
        if self.preset != PLAIN and not self.multi_turn:
            raise EvalError("--preset applies to the multi-turn categories only")
        try:
            preset(self.preset)
        except UnknownSetting as exc:  # refused with the list of presets
            raise EvalError(str(exc)) from exc


def partial_of(run_file: Path) -> Path:
    return (
        run_file
        if run_file.name.endswith(".partial")
        else run_file.with_name(run_file.name + ".partial")
    )


def resumed_settings(run_file: Path, **where: Any) -> BfclSettings:
    """The settings of the interrupted run ``run_file`` (or its ``.partial``), read from its
    records; ``where`` says where the servers are and how many requests are in flight (a
    :class:`Serving`'s fields but the model, which is the run's)."""
    partial = partial_of(run_file)
    out = partial.with_name(partial.name.removesuffix(".partial"))
    if not partial.exists():
        if out.exists():
            raise EvalError(f"{out} is finished (every item has a record): nothing to resume")
        raise EvalError(f"no {partial}: nothing to resume")
    records = read_items(partial)
    if not records:
        raise EvalError(f"{partial} holds no record yet: start the run again instead")
    spec, run = records[0].spec, records[0].bfcl
    if run.categories_asked is None:  # a version-1 record written before resume
        raise EvalError(
            f"{partial} was written before runs could be resumed (its records do not say which "
            "categories were asked): start the run again instead"
        )
    return BfclSettings(
        serving=Serving(**where, model=spec.model),
        categories=tuple(run.categories_asked),
        limit=run.limit,
        seed=run.seed if run.seed is not None else 0,
        out=out,
        label=spec.label,
        max_tokens=run.max_tokens,
        resume=partial,
        preset=spec.preset.name if spec.preset else PLAIN,
    )


def _header(
    settings: BfclSettings, servers: list[Server], loaded: dict[str, Any]
) -> tuple[RunSpec, BfclRun]:
    """What ran (the same :class:`RunSpec` a task eval records) and what BFCL's run fixes
    besides; built once, shared by every item's record."""
    preset = PresetRecord(
        name=settings.preset, settings=loop_settings(settings.preset, settings.max_tokens)
    )
    spec = served_spec(
        servers,
        settings.serving.model,
        settings.label,
        api="openai",
        # A multi-turn conversation runs through the loop under a preset; an item is one request.
        preset=preset if settings.multi_turn else None,
        solver="agent" if settings.multi_turn else "one-request",
        task_set="bfcl",
    )
    run = BfclRun(
        bfcl_eval=loaded["bfcl_eval"],
        checker_model=loaded["checker_model"],
        categories_asked=list(settings.categories),
        seed=settings.seed,
        limit=settings.limit,
        max_tokens=settings.max_tokens,
    )
    return spec, run


def result_line(record: dict[str, Any]) -> str:
    calls = ", ".join(f"{c['function']}({c['arguments']})" for c in record["calls"])
    shown = calls or "text: " + (record["content"] or "").replace("\n", " ")
    if len(shown) > 90:
        shown = shown[:87] + "..."
    latency = record["latency_ms"]
    mark = "✓" if record["valid"] else f"✗ {record['error_type']}"
    if record.get("turns") is not None:
        return (
            f"turns={len(record['turns'])} model calls={record['model_calls']} calls="
            f"{len(record['calls'])} ms/call={latency or 0:,.0f}  {mark}"
        )
    return f"calls={len(record['calls'])} latency={latency or 0:>8,.0f}ms  -> {shown}  {mark}"


async def run_bfcl(
    settings: BfclSettings,
    echo: Callable[[str], None] = print,
    bar: bool = False,
    checker: Checker | None = None,
    summarize: Summarize | None = None,
) -> Path:
    """Run the chosen items against the server(s); returns the run file, whose summaries
    ``summarize`` writes (the report's; none without it).

    ``checker``: a started checker to judge with (several runs in one process share one, as
    starting one imports all of bfcl-eval); it stays open. Without it the run starts its own.
    """
    settings.check()
    serving = settings.serving
    named = [serving.model] if serving.model else []
    servers = servers_for(
        discover(serving.base_urls, serving.key(), named, serving.api), serving.model
    )
    concurrency = serving.limited([servers])
    own = Checker(settings.checker_python) if checker is None else contextlib.nullcontext(checker)
    async with own as checker:
        entries: list[Entry] = []
        if settings.multi_turn:
            loaded = await checker.load_multi(list(settings.categories))
            entries = sample(
                [Entry.from_checker(e) for e in loaded["entries"]], settings.limit, settings.seed
            )
            items: list[Any] = entries
        else:
            loaded = await checker.load(list(settings.categories))
            items = sample(
                [Item.from_checker(i) for i in loaded["items"]], settings.limit, settings.seed
            )
        spec, run = _header(settings, servers, loaded)
        context = header(spec, run)  # what a resumed run's records are compared with
        model = spec.model
        out = settings.out or default_out(str(spec.label), settings.folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        runs = out.with_suffix(".runs")  # each conversation's state (ID.json) and trace
        kept = _kept(settings, context, items)
        done = {r.id for r in kept}
        todo = [item for item in items if item.id not in done]
        counts = ", ".join(
            f"{c} {sum(i.category == c for i in items)}" for c in dict.fromkeys(settings.categories)
        )
        software = ", ".join(sorted({s.software for s in servers}))
        echo(
            f"bfcl (bfcl-eval {loaded['bfcl_eval']}): {len(items)} items ({counts}), seed "
            f"{settings.seed}, model {model} ({spec.backend}, tool grammar "
            f"{spec.tool_grammar}), {len(servers)} server(s) ({software}): "
            + ", ".join(s.base_url for s in servers)
            + (f"; resuming {out.name}: {len(kept)} of {len(items)} kept" if kept else "")
            + ("" if settings.max_tokens is None else f"; replies capped at {settings.max_tokens}")
        )
        pool = ServerPool()
        options = TurnOptions(max_tokens=settings.max_tokens)
        to = RunFile(out, [i.id for i in items], _item_id, [r.line() for r in kept])
        started = time.monotonic()

        async def conversation(entry: Entry, write: Callable[[dict[str, Any]], None]) -> None:
            client = PooledClient(pool, servers)
            done, verdict = await judge(
                entry,
                client,
                model,
                checker,
                key=conversation_key(out, entry.id),
                loaded=loaded,
                settings=loop_settings(settings.preset, settings.max_tokens),
                recorder=Recorder(state_dir=runs, trace_path=runs / f"{entry.id}.trace.jsonl"),
            )
            record = entry_record(spec, run, entry, done, verdict, client.answered)
            write(record)
            progress.finished(f"{entry.id}: {result_line(record)}")

        async def one(item: Item, write: Callable[[dict[str, Any]], None]) -> None:
            client = PooledClient(pool, servers)
            reply, error = await ask(client, model, item, options)
            # What BFCL records when the request fails: the error as the model's text.
            result = (
                bfcl_result(item, reply.message) if reply else f"Error during inference: {error}"
            )
            verdict = await checker.score(item.id, item.category, result)
            record = item_record(spec, run, item, reply, error, verdict, result, client.answered)
            write(record)
            progress.finished(f"{item.id}: {result_line(record)}")

        each = conversation if settings.multi_turn else one
        try:
            with Progress(len(items), echo, bar, already=len(kept)) as progress:
                jobs = [(to, functools.partial(each, item)) for item in todo]
                raised = await drive(jobs, [to], concurrency)
        finally:
            await pool.aclose()
        if raised:
            echo(f"an item raised; the records of the others are kept in {to.partial}")
            raise raised[0]
    if summarize is not None:
        echo(summarize(out, round((time.monotonic() - started) * 1000, 1)))
    echo(f"wrote {out}")
    return out


def _item_id(line: dict[str, Any]) -> str:
    return str(line["id"])


def _kept(settings: BfclSettings, context: dict[str, Any], items: list[Item]) -> list[ItemRecord]:
    """The records a resumed run keeps: those of the items still drawn, from the same model."""
    if settings.resume is None:
        return []
    records = read_items(settings.resume)
    first = records[0].header
    was, now = first.get("model_sha256"), context["model_sha256"]
    if was != now:
        raise EvalError(
            f"{settings.resume} was run on {first.get('model')} (sha256 {was}); the server "
            f"now serves {context['model']} (sha256 {now}): resume against the same weights"
        )
    for key, what in SAME_ON_RESUME:
        before, after = first.get(key), context[key]
        if before != after:
            raise EvalError(
                f"{settings.resume} was run with {what} {before}; this run has {after}: "
                f"resume under the same {what}, or start the run again"
            )
    ids = {item.id for item in items}
    strays = [r.id for r in records if r.id not in ids]
    if strays:
        raise EvalError(
            f"{settings.resume} holds items this bfcl-eval does not draw ({', '.join(strays[:3])}"
            f"{' …' if len(strays) > 3 else ''}): start the run again instead"
        )
    return records
