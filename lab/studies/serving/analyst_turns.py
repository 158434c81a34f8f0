"""The SQL analyst's turns on the default model (the bench's other parts use the Coder-0.5B):
how much of each turn's prompt the prefix cache carries (the schema and every earlier result
are the prefix), with past replies as the model wrote them and as the template renders them,
with the schema learnt through describe and shown in the system prompt, and the wall time per
question with parallel tool calls on and off, side by side on the same questions.

The share reused is ``cache_n / (cache_n + prompt_n)``: llama.cpp's ``prompt_n`` counts the
tokens evaluated, ``cache_n`` those taken from the cache. Wall time is shown, never ranked by.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.database.figures import audit, reply_reuse
from evals.markdown import table
from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.tasks import DEFAULT_TASKS
from harness.presets import Preset, preset
from lab.studies.serving.common import Echo, Figures, Part, server_process, verdict
from serve_local.catalogue import DEFAULT_NAME
from serve_local.process import serve_command

TASKS = DEFAULT_TASKS.parent / "sql-test-s1000-n60.json"
QUESTIONS = 6  # the first six of the test set: one of each of six kinds
TARGET = 0.9


def _subset(folder: Path) -> Path:
    data = json.loads(TASKS.read_text(encoding="utf-8"))
    data["tasks"] = data["tasks"][:QUESTIONS]
    data["name"] = f"{data['name']}-first{QUESTIONS}"
    path = folder / "tasks.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _shares(records: list[Any]) -> dict[int, list[float]]:
    """Per turn index (1-based): the share of the prompt each turn took from the cache."""
    found: dict[int, list[float]] = {}
    for r in records:
        for i, t in enumerate(r.turn_timings or [], start=1):
            if t and (t.get("prompt_n") or 0) + (t.get("cache_n") or 0):
                found.setdefault(i, []).append(t["cache_n"] / (t["cache_n"] + t["prompt_n"]))
    return found


def _pairs(records: list[Any]) -> Iterator[tuple[Any, int, dict[str, Any], int]]:
    """Each turn from the second on that has timings, with the one before: the record, the
    turn's index, its timings, and the previous turn's whole context (its prompt and its
    reply) in tokens."""
    for r in records:
        timings = r.turn_timings or []
        for i, (before, after) in enumerate(itertools.pairwise(timings), start=2):
            if before and after:
                context = sum(before.get(k) or 0 for k in ("prompt_n", "cache_n", "predicted_n"))
                yield r, i, after, context


def _carried(records: list[Any]) -> dict[int, list[float]]:
    """Per turn index from 2: the share of the previous turn's whole context (its prompt and
    its reply) that this turn found in the cache. What is new on a turn (the tool results) is
    not in it, so this is the prefix cache's own work: 100 % when nothing before is evaluated
    again."""
    found: dict[int, list[float]] = {}
    for _, i, after, context in _pairs(records):
        if context:
            found.setdefault(i, []).append(min(after.get("cache_n") or 0, context) / context)
    return found


def _lowest(records: list[Any]) -> dict[str, Any] | None:
    """The turn from the second on with the lowest share taken from the cache, and its
    ceiling: the share it would have had were every token of the previous turn (its prompt and
    its reply) found in the cache, so that only what is new on this turn (the results of the
    previous turn's calls, a request of the loop) is evaluated."""
    lowest: dict[str, Any] | None = None
    for r, i, after, context in _pairs(records):
        total = (after.get("cache_n") or 0) + (after.get("prompt_n") or 0)
        if not total or not context:
            continue
        share = (after.get("cache_n") or 0) / total
        if lowest is None or share < lowest["share"]:
            lowest = {
                "task": r.task_id, "turn": i, "share": share,
                "ceiling": min(context, total) / total, "new_tokens": max(total - context, 0),
            }  # fmt: skip
    return lowest


def _measure(url: str, label: str, chosen: Preset, scratch: Path) -> dict[str, Any]:
    limits = chosen.limits
    settings = EvalSettings(
        serving=Serving(url), tasks=_subset(scratch), preset=chosen,
        loop=eval_loop(**limits),
        out=scratch / f"{label}.jsonl",
    )  # fmt: skip
    records = read_runs(asyncio.run(run_eval(settings, echo=lambda _: None)))
    shares = _shares(records)
    carried = _carried(records)
    reused, generated = reply_reuse(records)
    return {
        "correct": sum(r.correct for r in records),
        "questions": len(records),
        "turns": [r.turns for r in records],
        "wall_ms": [r.wall_ms for r in records],
        "median_wall_ms": statistics.median(r.wall_ms for r in records),
        "parallel_turns": sum(1 for r in records for n in _per_turn(audit(r)).values() if n > 1),
        "reuse_by_turn": {str(i): statistics.median(v) for i, v in sorted(shares.items())},
        "min_reuse_after_first": min(
            (x for i, v in shares.items() if i >= 2 for x in v), default=None
        ),
        "lowest_after_first": _lowest(records),
        "carried_by_turn": {str(i): statistics.median(v) for i, v in sorted(carried.items())},
        "min_carried": min((x for v in carried.values() for x in v), default=None),
        "reply_tokens": generated,
        "reply_tokens_reused": reused,
    }


# Each configuration, in the order the table shows them: its label, its preset, the
# settings it overrides, and whether the server renders a past reply as the model wrote it
# (``--written-replies``).
CONFIGS: tuple[tuple[str, str, dict[str, Any], bool], ...] = (
    ("parallel on", "analyst", {}, True),
    ("parallel off", "analyst", {"parallel_tool_calls": False}, True),
    ("replies re-rendered", "analyst", {}, False),
    ("schema shown", "analyst-schema", {}, True),
    ("schema shown, re-rendered", "analyst-schema", {}, False),
)
# The configurations the target is judged on: the chapter's loop and the schema in the prompt.
JUDGED = ("parallel on", "schema shown")


def run(echo: Echo) -> Figures:
    """Six questions five ways, one server process at a time: the analyst as it is, with one
    call per reply, with past replies rendered in the template's form (as llama-server does)
    instead of as the model wrote them, and with the schema in the system prompt
    (``analyst-schema``) both ways."""

    figures: dict[str, Any] = {"questions": QUESTIONS}
    with tempfile.TemporaryDirectory() as scratch:
        for written in (True, False):
            command = serve_command("llama", model=DEFAULT_NAME, written_replies=written)
            with server_process(command) as (url, _, _):
                for label, name, overrides, w in CONFIGS:
                    if w is written:
                        chosen = preset(name).overriding(overrides)
                        figures[label] = _measure(url, label, chosen, Path(scratch))
                        echo(f"   {label}: {figures[label]['reuse_by_turn']}")
    return figures


def _per_turn(audit: list[dict[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for a in audit:
        counts[int(a["turn"])] = counts.get(int(a["turn"]), 0) + 1
    return counts


def render(p: Figures) -> list[str]:
    on, off = p["parallel on"], p["parallel off"]
    labels = [label for label, *_ in CONFIGS if label in p]
    turns = sorted({t for label in labels for t in p[label]["reuse_by_turn"]}, key=int)
    rows = [[t, *(_pct(p[label]["reuse_by_turn"].get(t)) for label in labels)] for t in turns]
    rows.append(
        [
            "reply tokens kept",
            *(
                f"{p[label]['reply_tokens_reused']} of {p[label]['reply_tokens']}"
                for label in labels
            ),
        ]
    )
    rows.append(
        ["correct", *(f"{p[label]['correct']}/{p[label]['questions']}" for label in labels)]
    )
    ratio = on["median_wall_ms"] / off["median_wall_ms"] if off["median_wall_ms"] else None
    lines = [
        f"## The SQL analyst's turns ({p['questions']} questions of the sql test set)",
        "",
        "Share of each turn's prompt taken from the prefix cache, "
        "`cache_n / (cache_n + prompt_n)`, median over the questions; and of the tokens each "
        "reply generated, how many the next turn found in the cache. *parallel on* and *off*: the "
        "server started with `--written-replies`, rendering a past reply as the model wrote "
        "it; *replies re-rendered*: the default, a past call in the chat template's form (as "
        "llama-server does); *schema shown*: the `analyst-schema` preset, the tables and "
        "columns in the system prompt (with written replies, then re-rendered).",
        "",
        table(["turn", *labels], rows),
        "",
    ]
    for label in JUDGED:
        if label in p:
            low = p[label]["min_reuse_after_first"]
            line = (
                f"- Target: from turn 2 on, above {TARGET:.0%}. Lowest from turn 2 on "
                f"({label}): {_pct(low)}, {verdict(low is not None and low > TARGET)}"
            )
            if where := p[label].get("lowest_after_first"):
                line += (
                    f" ({where['task']}, turn {where['turn']}; were every token of the turn "
                    f"before found in the cache, its {where['new_tokens']} new tokens would "
                    f"leave it {_pct(where['ceiling'])})"
                )
            lines.append(line + ".")
    lines.append(
        f"- Median wall per question: {on['median_wall_ms'] / 1000:,.1f} s with parallel calls "
        f"on, {off['median_wall_ms'] / 1000:,.1f} s off"
        + (f" (ratio {ratio:.2f})" if ratio else "")
        + f"; turns with more than one call: {on['parallel_turns']} on, "
        f"{off['parallel_turns']} off."
    )
    if "carried_by_turn" in on:  # measured since the figure was added
        kept = sorted({t for label in labels for t in p[label]["carried_by_turn"]}, key=int)
        lines += [
            "",
            "What the cache carried: of the previous turn's whole context (its prompt and its "
            "reply), the share this turn found in the cache, median over the questions. The "
            "share above counts each turn's new tokens too (the tool results, new by "
            "definition), so it cannot reach 100 % on a turn that follows a call; this one "
            "reaches 100 % when nothing before is evaluated again.",
            "",
            table(
                ["turn", *labels],
                [
                    [t, *(_pct(p[label]["carried_by_turn"].get(t)) for label in labels)]
                    for t in kept
                ],
            ),
            "",
            "- Lowest carried, any turn: "
            + "; ".join(f"{label} {_pct(p[label]['min_carried'])}" for label in labels)
            + ".",
        ]
    return [*lines, ""]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


DOCS_PAGE = Path("docs/sql.md")


def docs(p: Figures) -> list[tuple[Path, str, str]]:
    """docs/sql.md's prefix-cache figures: bench.md's section without its heading."""
    return [(DOCS_PAGE, "analyst-cache", "\n".join(render(p)[2:]).strip() + "\n")]


PART = Part("analyst", run, render, docs)
