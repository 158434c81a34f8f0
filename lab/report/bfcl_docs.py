"""docs/bfcl.md's tables and counted blocks, built from the committed BFCL runs
(``make bfcl-report``; a test builds them again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.bfcl.items import RELEVANCE
from evals.markdown import table
from evals.record.bfcl import ItemRecord, read_items
from evals.report.bfcl import call_mean, percent, published, published_figure, summarize
from evals.report.bfcl_habits import agreement, conversations_table, replies_table
from lab.report.docs import fill

# The tables docs/bfcl.md quotes, each between <!-- NAME --> markers: the committed runs it
# shows (file stem under results/bfcl/, and how the page names it) and the published models
# beside them. `make bfcl-report` writes them; a test builds them again from the runs.
COMMITTED = Path(__file__).resolve().parents[2] / "results" / "bfcl"
DOCS = COMMITTED.parents[1] / "docs" / "bfcl.md"
DOCS_TABLES: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "bfcl-single-turn": (
        [
            ("20261201-030232-coder-1.5b-grammar-lazy", "Coder-1.5B, our server, grammar `lazy`"),
            ("20261130-234242-coder-1.5b-grammar-off", "Coder-1.5B, our server, grammar `off`"),
            ("20261201-004133-coder-1.5b-llama-server-jinja", "Coder-1.5B, `llama-server --jinja`"),
            ("20261201-005807-coder-0.5b-grammar-lazy", "Coder-0.5B, our server, `lazy`"),
            ("20261201-023316-smollm2-135m-grammar-lazy", "SmolLM2-135M, `lazy`, 256-token cap"),
            ("20261201-034442-coder-1.5b-grammar-lazy-full", "Coder-1.5B, `lazy`, every item"),
        ],
        ["1.5b", "0.5b"],
    ),
    "bfcl-multi-turn": (
        [
            ("20261201-222656-coder-1.5b-multi-turn-base", "Coder-1.5B, plain loop"),
            ("20261202-012400-coder-1.5b-multi-turn-miss-long", "Coder-1.5B, plain loop"),
        ],
        ["1.5b"],
    ),
    "bfcl-live": ([("20261202-050656-coder-1.5b-live", "Coder-1.5B, our server, `lazy`")], []),
}


def _docs_cell(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return ""
    low, high = rate["ci95"]
    return (
        f"{rate['correct']}/{rate['n']}, {100 * rate['accuracy']:.1f} % "
        f"[{100 * low:.1f}, {100 * high:.1f}]"
    )


def docs_table(runs: list[tuple[str, str]], sizes: list[str], folder: Path = COMMITTED) -> str:
    """One row per category the runs hold (relevance after), a column per run (its categories
    merged where two runs share a name) and per published model; the call mean last."""
    columns: dict[str, dict[str, dict[str, Any]]] = {}
    means: dict[str, float | None] = {}
    for stem, name in runs:
        summary = summarize(read_items(folder / f"{stem}.jsonl"))
        columns.setdefault(name, {}).update(summary["categories"])
        means[name] = call_mean(columns[name])
    categories = list(dict.fromkeys(c for per in columns.values() for c in per))
    categories = [c for c in categories if c not in RELEVANCE] + [
        c for c in categories if c in RELEVANCE
    ]
    models = [m for size in sizes for m in published()["models"] if m["size"] == size]
    head = ["category", *columns, *(f"published: {m['model']}" for m in models)]
    body = [
        [
            f"`{c}`" + (" (apart)" if c in RELEVANCE else ""),
            *(_docs_cell(per.get(c)) for per in columns.values()),
            *(percent(published_figure(m, c)) for m in models),
        ]
        for c in categories
    ]
    body.append(
        [
            "call mean (unweighted, relevance apart)",
            *("" if means[n] is None else f"{100 * float(means[n] or 0):.1f}" for n in columns),
            *("" for _ in models),
        ]
    )
    return table(head, body)


# The runs whose records docs/bfcl.md describes, counted (evals.report.bfcl_habits).
MULTI_TURN_RUNS = [
    ("20261201-222656-coder-1.5b-multi-turn-base", "Coder-1.5B, plain loop, base"),
    ("20261202-012400-coder-1.5b-multi-turn-miss-long", "Coder-1.5B, plain loop, the other three"),
    ("20261202-052532-coder-1.5b-multi-turn-base-guarded", "Coder-1.5B, `guarded`, base"),
    ("20261202-053220-coder-0.5b-multi-turn-base", "Coder-0.5B, plain loop, base"),
    ("20261202-053501-coder-0.5b-multi-turn-miss-long", "Coder-0.5B, plain loop, the other three"),
]
SINGLE_TURN_RUNS = [
    *DOCS_TABLES["bfcl-single-turn"][0],
    ("20261202-050656-coder-1.5b-live", "Coder-1.5B, live categories"),
]
GRAMMAR_PAIR = ("20261130-234242-coder-1.5b-grammar-off", "20261201-030232-coder-1.5b-grammar-lazy")


def habits_blocks(folder: Path = COMMITTED) -> dict[str, str]:
    """docs/bfcl.md's counted blocks: the multi-turn conversations, the single-turn replies and
    the grammar's two runs item by item."""

    def load(stem: str) -> list[ItemRecord]:
        return read_items(folder / f"{stem}.jsonl")

    off, lazy = (load(stem) for stem in GRAMMAR_PAIR)
    same = agreement(off, lazy)
    return {
        "bfcl-multi-habits": conversations_table([(n, load(s)) for s, n in MULTI_TURN_RUNS]),
        "bfcl-single-replies": replies_table([(n, load(s)) for s, n in SINGLE_TURN_RUNS])
        + f"\nThe grammar `lazy` against `off` (`{GRAMMAR_PAIR[1]}`, `{GRAMMAR_PAIR[0]}`): "
        f"{same['items']} items in both, {same['same_verdict']} with the same verdict, "
        f"{same['same_calls']} with the same calls.\n",
    }


def write_docs_tables(docs: Path = DOCS) -> None:
    """Every table of ``DOCS_TABLES``, and the counted blocks, into docs/bfcl.md."""
    for name, (runs, sizes) in DOCS_TABLES.items():
        fill(docs, name, docs_table(runs, sizes))
    for name, text in habits_blocks().items():
        fill(docs, name, text)
