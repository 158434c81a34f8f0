"""The slots benchmark's section of bench.md and docs/scale.md's table, from the figures
:mod:`lab.studies.serving.slots` measures (``make bench BENCH_PARTS=slots``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.markdown import table
from lab.studies.serving.common import Figures, Part, fmt
from lab.studies.serving.slots import (
    TARGET_SPEEDUP,
    rescored,
    run,
)


def _speedup(s: Figures, r: dict[str, Any]) -> float | None:
    """Task runs per minute over the same engine's at the first slot count."""
    base = _row_of(s, r["engine"], s["levels"][0])
    if base and base.get("runs_per_min") and r.get("runs_per_min"):
        return float(r["runs_per_min"]) / float(base["runs_per_min"])
    return None


def _row_of(figures: Figures, engine: str, slots: int) -> dict[str, Any] | None:
    return next((r for r in figures["rows"] if r["engine"] == engine and r["slots"] == slots), None)


def render(s: Figures) -> list[str]:
    levels = s["levels"]
    decode = s["decode"]
    alone = decode[0]["ms_per_token"]
    lines = [
        "## Slots: several conversations decoded at once",
        "",
        f"`{s['model']}` on `{Path(s['tasks']).name}` through the eval runner (preset "
        f"`{s['preset']}`, at most {s['max_turns']} turns), on our server with `--slots N` and "
        f"on llama.cpp's `llama-server --parallel N` (same GGUF, `--threads {s['threads']}`), "
        "each configuration a fresh server warmed with one request, the two engines side by "
        "side at each N; the eval keeps N task runs in flight (read from the server). Latency "
        "per turn is the client's, queueing included; tokens per second are generated tokens "
        "over the eval's wall time; peak RSS is the server process's.",
        "",
    ]
    lines.append(slots_table(s, [name for name, _ in COLUMNS]))
    lines += [
        "",
        f"![latency per turn against task runs per minute](plots/{Path(s['plot']).name})",
        "",
    ]
    ours = {n: _row_of(s, "ours", n) for n in levels}
    peer = {n: _row_of(s, "llama-server", n) for n in levels}
    lines += [
        "Targets:",
        "",
        "- Per generated token at 1 slot no slower than before: at one slot the server runs "
        "the one-request path unchanged (the slot engine starts only with `--slots` above 1), "
        "so its figure is the one in the serving section above.",
    ]
    one, four = ours.get(1), ours.get(4)
    if one and four and one.get("runs_per_min") and four.get("runs_per_min"):
        x = four.get("runs_per_min") / one["runs_per_min"]
        lines.append(
            f"- Task runs per minute at 4 slots ≥ {TARGET_SPEEDUP:g}× one slot (ours): "
            f"measured {x:.2f}×, {'pass' if x >= TARGET_SPEEDUP else 'falls short'}."
        )
    beats = [
        f"{n}: {o['runs_per_min'] / p['runs_per_min']:.2f}×"
        for n in levels
        if (o := ours[n]) and (p := peer[n]) and p.get("runs_per_min") and o.get("runs_per_min")
    ]
    if beats:
        ok = all(
            o["runs_per_min"] >= p["runs_per_min"]
            for n in levels
            if (o := ours[n]) and (p := peer[n]) and p.get("runs_per_min")
        )
        lines.append(
            "- Task runs per minute, ours / llama-server: "
            f"{', '.join(beats)}: {'pass' if ok else 'falls short'}. The two engines do not "
            "do the same work per task run (their verdicts and turn lengths differ; see the "
            "correct column), so the same requests decide the next line."
        )
    same = [
        (n, o["replay"]["tokens_per_s"] / p["replay"]["tokens_per_s"])
        for n in levels
        if (o := ours[n]) and (p := peer[n]) and p["replay"]["tokens_per_s"]
    ]
    if same:
        lines.append(
            "- Ours ≥ llama-server at every slot count, on the same requests (generated tokens "
            "per second, ours / llama-server): "
            + ", ".join(f"{n}: {x:.2f}×" for n, x in same)
            + f": {'pass' if all(x >= 1 for _, x in same) else 'falls short'}."
        )
    if any(r["engine"] == "llama-server" and not r["task_runs"] for r in s["rows"]):
        lines.append(
            "- llama-server was not run through the eval (`slots.PEER_EVAL`): it makes no tool "
            "call from this model, so each task runs to the turn cap with replies cut at the "
            "preset's token cap, about a minute a task on two cores."
        )
    lines += [
        "",
        "What one `llama_decode` costs per token as the batch grows (one token per sequence up "
        "to 8 sequences, then several per sequence; median of five, after a 256-token prompt "
        "per sequence): batching pays only where a batched token costs less than one alone.",
        "",
    ]
    lines.append(
        table(
            ["tokens in the batch", "ms per batch", "ms per token", "× one alone"],
            [
                [
                    d["batch"],
                    fmt(d["ms"], ",.1f"),
                    fmt(d["ms_per_token"]),
                    fmt(d["ms_per_token"] / alone),
                ]
                for d in decode
            ],
        )
    )
    parted = [(r, d) for r in s["rows"] for d in (r.get("agreement") or {}).get("differing", [])]
    if parted:
        lines += [
            "",
            "Verdicts that differ from one slot, and where the transcripts part (reply number, "
            "token within it):",
            "",
        ]
        lines.append(
            table(
                [
                    "engine",
                    "slots",
                    "task",
                    "1 slot",
                    "N slots",
                    "turn",
                    "token",
                    "1 slot wrote",
                    "N slots wrote",
                ],
                [
                    [
                        r["engine"],
                        r["slots"],
                        d["task"],
                        "✓" if d["one_slot"] else "✗",
                        "✓" if d["slots"] else "✗",
                        d["turn"],
                        d["token"],
                        d["a"][:80],
                        d["b"][:80],
                    ]
                    for r, d in parted
                ],
            )
        )
    return lines


DOCS_PAGE = Path("docs/scale.md")


def _agreed(r: dict[str, Any]) -> str:
    agree = r.get("agreement")
    return "–" if agree is None else f"{agree['same_verdict']}/{agree['tasks']}"


# Every column of the slots table, in bench.md's order: its head, and its cell for a row
# (the figures, and the row).
COLUMNS: list[tuple[str, Any]] = [
    ("engine", lambda s, r: r["engine"]),
    ("slots", lambda s, r: r["slots"]),
    ("task runs/min", lambda s, r: fmt(r.get("runs_per_min"))),
    ("× 1 slot", lambda s, r: fmt(_speedup(s, r))),
    ("turn ms median", lambda s, r: fmt(r.get("turn_ms_median"), ",.0f")),
    ("turn ms p90", lambda s, r: fmt(r.get("turn_ms_p90"), ",.0f")),
    ("tokens/s", lambda s, r: fmt(r.get("tokens_per_s"))),
    ("ms per generated token", lambda s, r: fmt(r.get("ms_per_generated"))),
    ("ms per prompt token", lambda s, r: fmt(r.get("ms_per_prompt"))),
    ("same requests: tokens/s", lambda s, r: fmt(r["replay"]["tokens_per_s"])),
    ("same requests: ms median", lambda s, r: fmt(r["replay"]["request_ms_median"], ",.0f")),
    ("peak RSS MB", lambda s, r: fmt(r["peak_rss_mb"], ",.0f")),
    ("first turn cached", lambda s, r: fmt(r.get("first_turn_cached"), ".0%")),
    ("correct", lambda s, r: f"{r['correct']}/{r['task_runs']}" if r["task_runs"] else "–"),
    ("errors", lambda s, r: fmt(r.get("errors"), "d")),
    ("same verdict as 1 slot", lambda s, r: _agreed(r)),
    ("load before/after", lambda s, r: f"{r['load_before']} / {r['load_after']}"),
]
# docs/scale.md's table: the columns a reader compares.
DOCS_COLUMNS = [
    "engine", "slots", "task runs/min", "× 1 slot", "turn ms median",
    "same requests: tokens/s", "correct", "same verdict as 1 slot",
]  # fmt: skip


def slots_table(s: Figures, names: list[str]) -> str:
    """The slots table with the columns ``names``, one row per engine and slot count."""
    cells = dict(COLUMNS)
    return table(names, [[cells[n](s, r) for n in names] for r in s["rows"]])


def docs(s: Figures) -> list[tuple[Path, str, str]]:
    """docs/scale.md's table, from the same figures as bench.md's section."""
    decode = ", ".join(f"{d['batch']}: {d['ms_per_token'] / s['decode'][0]['ms_per_token']:.2f}×"
                       for d in s["decode"])  # fmt: skip
    text = (
        f"`{s['model']}` on `{Path(s['tasks']).name}`, preset `{s['preset']}`, "
        f"`--threads {s['threads']}` ([results/bench.md](../results/bench.md), section "
        "Slots, has every column):\n\n"
        + slots_table(s, DOCS_COLUMNS)
        + f"\nCost of a generated token in a batch of B tokens, against one alone: {decode}.\n"
    )
    return [(DOCS_PAGE, "slots-table", text)]


PART = Part("slots", run, render, docs, rescored)
