"""Tables the docs quote from single committed runs: the fresh clone's run (docs/findings.md),
the call grammar on and off (docs/server.md) and the first runs on the six file tasks
(docs/policies.md). ``python -m evals compare`` writes them when
it writes the committed summary (``make compare``, ``make rescore``), and a test builds them
again from the run files, so a rescored run cannot leave its docs behind."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from evals.markdown import clip, table
from evals.record.files import committed
from evals.record.run import RunRecord, is_error, read_runs
from evals.stats import wilson
from lab.report.docs import fill

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "results" / "runs"
SUMMARY = ROOT / "results" / "summary.md"
FRESH_CLONE = RUNS / "20261130-214336-fresh-clone-default.jsonl"
GRAMMAR_OFF = RUNS / "20261130-221955-qwen2.5-coder-1.5b-grammar-off.jsonl"
ANSWER_CHARS = 81  # with the ellipsis


def task_table(run_file: Path) -> str:
    """One row per task run: turns, tool runs, the verdict and the answer."""
    rows = [
        [
            r.task_id,
            r.turns,
            r.tool_runs,
            "✓" if r.correct else "✗",
            clip(r.answer or "", ANSWER_CHARS),
        ]
        for r in read_runs(run_file)
    ]
    return table(["task", "turns", "tools", "correct", "answer"], rows)


def _mean_turn(records: list[RunRecord]) -> str:
    latencies = [ms for r in records for ms in r.turn_latency_ms]
    return f"{statistics.fmean(latencies):,.0f} ms" if latencies else "–"


# Each column a table of run totals may show: its heading and how it reads a run's records.
TOTALS: dict[str, Callable[[list[RunRecord]], object]] = {
    "correct": lambda rs: f"{sum(r.correct for r in rs)}/{len(rs)}",
    "turns": lambda rs: sum(r.turns for r in rs),
    "tool runs": lambda rs: sum(r.tool_runs for r in rs),
    "refused calls": lambda rs: sum(r.refused_calls or 0 for r in rs),
    "calls left as text": lambda rs: sum(r.call_shaped_text or 0 for r in rs),
    "invalid arguments": lambda rs: sum(r.invalid_calls or 0 for r in rs),
    "completion tokens": lambda rs: sum(r.completion_tokens for r in rs),
    "turns cut at the length cap": lambda rs: sum(
        f in ("length", "max_tokens") for r in rs for f in r.turn_finish_reasons or []
    ),
    "mean turn": _mean_turn,
}


def totals_table(runs: list[tuple[str, Path]], columns: list[str], first: str = "run") -> str:
    """One row per run (named as given), one column per name of ``TOTALS``."""
    rows = []
    for name, path in runs:
        records = read_runs(path)
        rows.append([name, *(TOTALS[c](records) for c in columns)])
    return table([first, *columns], rows)


GRAMMAR_COLUMNS = ["correct", "turns", "tool runs", "refused calls", "calls left as text",
                   "invalid arguments", "completion tokens"]  # fmt: skip


# docs/policies.md's first committed runs on the six file tasks: each run file, as the page
# names it.
FIRST_RUNS = [
    ("20261130-110620-scripted-oracle",
     "`scripted-oracle` (the oracle before it reported what each file says)"),
    ("20261130-203658-scripted-oracle", "`scripted-oracle` (`20261130-203658`, today's oracle)"),
    ("20261130-113201-qwen-coder-0.5b-llama-no-grammar", "`qwen-coder-0.5b-llama-no-grammar`"),
    ("20261130-113354-qwen-coder-0.5b-llama-grammar", "`qwen-coder-0.5b-llama-grammar`"),
    ("20261130-113443-smollm2-135m-llama-grammar", "`smollm2-135m-llama-grammar`"),
    ("20261130-113903-qwen-coder-0.5b-transformers-grammar",
     "`qwen-coder-0.5b-transformers-grammar`"),
    ("20261130-115109-qwen-messages", "`qwen-messages` (`--api anthropic`)"),
]  # fmt: skip


def first_runs_table(runs: list[tuple[str, str]] = FIRST_RUNS) -> str:
    """Each run's correct answers as first recorded and under today's checks, its turns and
    tool runs, what its calls did (a scripted provider's are not counted), its wall time and
    mean turn."""
    head = ["run (label)", "correct (first recorded → grounded)", "turns", "tool runs",
            "invalid args", "calls left as text", "wall", "mean turn"]  # fmt: skip
    rows = []
    for stem, name in runs:
        records = read_runs(RUNS / f"{stem}.jsonl")
        first = sum(bool(r.rescored["first_verdict"]) if r.rescored else r.correct for r in records)
        now = sum(r.correct for r in records)
        latencies = [ms for r in records for ms in r.turn_latency_ms]
        scripted = records[0].spec.backend == "scripted"
        rows.append(
            [
                name,
                f"{first}/{len(records)} → {now}/{len(records)}",
                sum(r.turns for r in records),
                sum(r.tool_runs for r in records),
                "–" if scripted else sum(r.invalid_calls or 0 for r in records),
                "–" if scripted else sum(r.call_shaped_text or 0 for r in records),
                f"{sum(r.wall_ms for r in records) / 1000:.1f} s",
                f"{statistics.fmean(latencies):,.0f} ms" if latencies else "–",
            ]
        )
    return table(head, rows)


# The committed runs on the generated test set (docs/compare.md, docs/policies.md), as the
# pages name them.
GEN_TEST_RUNS = [
    ("20261201-025405-gen-test-qwen2.5-coder-1.5b-read-listed",
     "Qwen2.5-Coder-1.5B, `read-listed` (best on files6)"),
    ("20261201-014502-gen-test-qwen2.5-coder-1.5b-read-first", "Qwen2.5-Coder-1.5B, `read-first`"),
    ("20261130-213246-gen-test-qwen2.5-coder-1.5b-all-helps", "Qwen2.5-Coder-1.5B, `all-helps`"),
    ("20261130-220905-gen-test-qwen2.5-coder-0.5b-all-helps", "Qwen2.5-Coder-0.5B, `all-helps`"),
    ("20261201-022231-gen-test-qwen2.5-coder-0.5b-list-first",
     "Qwen2.5-Coder-0.5B, `list-first` (its best on files6)"),
    ("20261201-022949-gen-test-smollm2-135m-all-helps", "SmolLM2-135M, `all-helps`"),
    ("20261201-023044-gen-test-smollm2-135m-focused",
     "SmolLM2-135M, `focused` (its best on files6)"),
]  # fmt: skip


def kinds_table(runs: list[tuple[str, str]] = GEN_TEST_RUNS) -> str:
    """One row per run: its correct answers with their interval (and as first recorded, where
    today's checks moved them), its turns, and its correct answers per kind of question (error
    records left out)."""
    loaded = [(name, [r for r in read_runs(RUNS / f"{stem}.jsonl") if not is_error(r)])
              for stem, name in runs]  # fmt: skip
    kinds = sorted({r.kind or "?" for _, records in loaded for r in records})
    rows = []
    for name, records in loaded:
        n, right = len(records), sum(r.correct for r in records)
        first = sum(bool(r.rescored["first_verdict"]) if r.rescored else r.correct for r in records)
        cells = []
        for kind in kinds:
            mine = [r for r in records if (r.kind or "?") == kind]
            cells.append(f"{sum(r.correct for r in mine)}/{len(mine)}" if mine else "–")
        rows.append(
            [name, f"{right}/{n}, {wilson(right, n).interval()}",
             f"{first}/{n}" if first != right else "same", sum(r.turns for r in records), *cells]
        )  # fmt: skip
    return table(["run", "correct", "first recorded", "turns", *kinds], rows)


LEADERBOARD = ROOT / "results" / "leaderboard" / "leaderboard.json"


def false_claims_table(board: Path = LEADERBOARD) -> str:
    """Per leaderboard entrant: its right answers, those that also state something the
    workspace contradicts ("right, with a false claim"), and their kinds of question."""
    rows = []
    for entry in json.loads(board.read_text(encoding="utf-8"))["rows"]:
        records = [r for r in read_runs(ROOT / entry["run_file"]) if not is_error(r)]
        right = [r for r in records if r.correct]
        flagged = [r for r in right if r.false_claims]
        kinds = Counter(r.kind or "?" for r in flagged)
        rows.append(
            [
                f"{entry['model']} {entry['preset']}",
                len(right),
                f"{len(flagged)}"
                + (f" ({100 * len(flagged) / len(right):.0f} %)" if right else ""),
                ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "–",
            ]
        )
    return table(["entrant", "right answers", "right, with a false claim", "by kind"], rows)


# docs/scale.md: the Coder-0.5B's run against llama-server at four slots, beside the same model
# and preset on our server.
PEER_RUNS = [
    ("`qwen-coder-0.5b-llama-server-c4` (llama-server, four slots)",
     RUNS / "20261130-151141-qwen-coder-0.5b-llama-server-c4.jsonl"),
    ("the sweep's Coder-0.5B `penalized` row (our server)",
     RUNS / "20261130-121743-sweep-qwen2.5-coder-0.5b-instruct-penalized.jsonl"),
]  # fmt: skip


PEER_COLUMNS = ["correct", "turns", "tool runs", "calls left as text",
                "turns cut at the length cap", "mean turn"]  # fmt: skip


MCP = ROOT / "results" / "mcp"


def mcp_runs_table(folder: Path = MCP) -> str:
    """docs/mcp.md's runs: per run file, its correct answers, turns, prompt tokens per turn,
    mean turn latency and calls written as text (error records left out)."""
    rows = []
    for path in committed(folder):
        records = [r for r in read_runs(path) if not is_error(r)]
        n, right = len(records), sum(r.correct for r in records)
        turns = sum(r.turns for r in records)
        latencies = [ms for r in records for ms in r.turn_latency_ms]
        rows.append(
            [
                f"`{path.stem}`",
                f"{right}/{n}, {wilson(right, n).interval()}",
                turns,
                f"{sum(r.prompt_tokens for r in records) / turns:,.0f}" if turns else "–",
                f"{statistics.fmean(latencies):,.0f} ms" if latencies else "–",
                sum(r.call_shaped_text or 0 for r in records),
            ]
        )
    head = ["run", "correct", "turns", "prompt tokens per turn", "mean turn", "calls as text"]
    return table(head, rows)


BLOCKS: list[tuple[Path, str, list[Path], Callable[[], str]]] = [
    (
        ROOT / "docs" / "findings.md",
        "fresh-clone-run",
        [FRESH_CLONE],
        lambda: task_table(FRESH_CLONE),
    ),
    (
        ROOT / "docs" / "server.md",
        "grammar-runs",
        [FRESH_CLONE, GRAMMAR_OFF],
        lambda: totals_table(
            [("lazy (default)", FRESH_CLONE), ("off", GRAMMAR_OFF)], GRAMMAR_COLUMNS, "tool grammar"
        ),
    ),
    (
        ROOT / "docs" / "policies.md",
        "first-runs",
        [RUNS / f"{stem}.jsonl" for stem, _ in FIRST_RUNS],
        first_runs_table,
    ),
    (
        ROOT / "docs" / "policies.md",
        "false-claims",
        [LEADERBOARD],
        false_claims_table,
    ),
    (ROOT / "docs" / "mcp.md", "mcp-runs", [MCP], mcp_runs_table),
    (
        ROOT / "docs" / "scale.md",
        "llama-server-run",
        [p for _, p in PEER_RUNS],
        lambda: totals_table(PEER_RUNS, PEER_COLUMNS),
    ),
    *(
        (page, "gen-test-runs", [RUNS / f"{stem}.jsonl" for stem, _ in GEN_TEST_RUNS], kinds_table)
        for page in (ROOT / "docs" / "compare.md", ROOT / "docs" / "policies.md")
    ),
]


def write_quoted() -> list[str]:
    """Fill each block whose run files are all here; a block whose runs are gone (a checkout
    without results/runs/) is left as it stands. Returns one line per block left."""
    kept = []
    for page, name, inputs, make in BLOCKS:
        missing = [p for p in inputs if not p.exists()]
        if missing:
            kept.append(
                f"{page.relative_to(ROOT)}: block {name} kept ({missing[0].name} is not here)"
            )
            continue
        fill(page, name, make())
    return kept
