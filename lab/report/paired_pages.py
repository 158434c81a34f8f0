"""The paired comparisons the docs quote (``make paired``, ``make mcp-report``): each named pair
of committed runs, A the baseline, written to its page by
:func:`evals.report.compare.paired_table`, and one table of their verdicts for the pages that
quote them. A test builds both again from the run files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from evals.markdown import table
from evals.report.compare import load_runs, paired_table
from evals.report.pairing import paired
from lab.report.docs import fill

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


@dataclass(frozen=True)
class Pair:
    """Run B against run A (paths relative to ``results/``), written to ``page``."""

    name: str
    a: str
    b: str
    page: str
    across_surfaces: bool = False

    def files(self, results: Path = RESULTS) -> tuple[Path, Path]:
        return results / self.a, results / self.b


def _presets(name: str, a: str, b: str) -> Pair:
    return Pair(name, f"runs/{a}.jsonl", f"runs/{b}.jsonl", f"paired/{name}.md")


def _surfaces(a: str, b: str) -> Pair:
    return Pair(a, f"mcp/{a}.jsonl", f"mcp/{b}.jsonl", f"mcp/paired-{a}.md", across_surfaces=True)


_S = "sweep-qwen2.5-coder-1.5b-instruct"
_G = "gen-test-qwen2.5-coder"
# The presets' pairs (docs/policies.md, docs/compare.md): results/paired/NAME.md.
PRESET_PAIRS = [
    _presets("files6-1.5b-all-helps-vs-read-first",
            f"20261201-012944-{_S}-all-helps", f"20261201-012919-{_S}-read-first"),
    _presets("files6-1.5b-all-helps-vs-read-listed",
            f"20261201-012944-{_S}-all-helps", f"20261201-025200-{_S}-read-listed"),
    _presets("files6-1.5b-penalized-vs-all-helps",
            f"20261130-211453-{_S}-penalized", f"20261130-212233-{_S}-all-helps"),
    _presets("files6-1.5b-read-first-vs-read-listed",
            f"20261201-012919-{_S}-read-first", f"20261201-025200-{_S}-read-listed"),
    _presets("gen-test-1.5b-all-helps-vs-read-first",
            f"20261130-213246-{_G}-1.5b-all-helps", f"20261201-014502-{_G}-1.5b-read-first"),
    _presets("gen-test-1.5b-all-helps-vs-read-listed",
            f"20261130-213246-{_G}-1.5b-all-helps", f"20261201-025405-{_G}-1.5b-read-listed"),
    _presets("gen-test-1.5b-read-first-vs-read-listed",
            f"20261201-014502-{_G}-1.5b-read-first", f"20261201-025405-{_G}-1.5b-read-listed"),
    _presets("gen-test-qwen-0.5b-vs-1.5b",
            f"20261130-220905-{_G}-0.5b-all-helps", f"20261130-213246-{_G}-1.5b-all-helps"),
]  # fmt: skip
# Our tools against each community server on the same questions (docs/mcp.md):
# results/mcp/paired-A.md.
SURFACES = [
    _surfaces("files6-ours-penalized", "files6-filesystem-penalized"),
    _surfaces("gen-test-s1000-n60-ours-penalized", "gen-test-s1000-n60-filesystem-penalized"),
    _surfaces("sql-test-s1000-n60-ours-analyst", "sql-test-s1000-n60-sqlite-analyst"),
]


def _folders(run: str) -> Pair:
    return Pair(
        f"{run}-folders",
        f"superseded/mcp/{run}.jsonl",
        f"mcp/{run}.jsonl",
        f"mcp/paired-{run}-folders.md",
    )


# Each MCP run whose task folders bore the task's id (results/superseded/mcp) against the same
# run at neutral folders (docs/mcp.md): results/mcp/paired-RUN-folders.md.
FOLDERS = [
    _folders("files6-filesystem-penalized"),
    _folders("files6-ours-penalized"),
    _folders("gen-test-s1000-n60-filesystem-penalized"),
    _folders("gen-test-s1000-n60-ours-penalized"),
    _folders("git-test-s1000-n60-penalized"),
]


def _slots(entry: str) -> Pair:
    return Pair(
        entry,
        f"leaderboard/{entry}.jsonl",
        f"leaderboard/slots4/{entry}.jsonl",
        f"leaderboard/slots4/paired-{entry}.md",
    )


# The default model's leaderboard entries one request at a time against four slots
# (make leaderboard-slots; docs/scale.md): results/leaderboard/slots4/paired-ENTRY.md.
SLOTS = [
    _slots("qwen2.5-coder-1.5b-instruct-all-helps"),
    _slots("qwen2.5-coder-1.5b-instruct-read-listed"),
]
# Each docs block of verdicts: (the pages, the block's name, its pairs).
BLOCKS = [
    (
        [ROOT / "docs" / "policies.md", ROOT / "docs" / "compare.md"],
        "paired-policies",
        PRESET_PAIRS,
    ),
    ([ROOT / "docs" / "mcp.md"], "paired-surfaces", SURFACES),
    ([ROOT / "docs" / "mcp.md"], "paired-folders", FOLDERS),
    ([ROOT / "docs" / "scale.md"], "paired-slots", SLOTS),
]


def ready(pairs: list[Pair], results: Path = RESULTS) -> list[Pair]:
    """The pairs whose two run files are there (a leaderboard entry still running has only its
    ``.partial``)."""
    return [p for p in pairs if all(f.is_file() for f in p.files(results))]


def took(run: Any) -> str:
    """How long the run took (its summary file's ``elapsed_ms``: the command that finished it,
    so a resumed run's last part only, which is said) and the day it began."""
    summary = run.path.with_name(run.path.name.removesuffix(".jsonl") + ".summary.json")
    elapsed = json.loads(summary.read_text()).get("elapsed_ms") if summary.is_file() else None
    ends = sorted(datetime.fromisoformat(r.timestamp) for r in run.records if r.timestamp)
    day = ends[0].date().isoformat() if ends else "?"
    if not elapsed:
        return f"– on {day}"
    start = ends[-1] - timedelta(milliseconds=elapsed + 1000)  # timestamps are to the second
    last = sum(end >= start for end in ends)
    part = f" (the last {last} of {len(ends)} task runs, resumed)" if last < len(ends) else ""
    return f"{elapsed / 60000:.0f} min{part} on {day}"


def slots_table(pairs: list[Pair], results: Path = RESULTS) -> str:
    """Each entry one request at a time against four slots: the correct answers and how long
    each run took on which day (wall times of runs made on different days compare the days as
    much as the settings), and the paired verdict."""
    rows = []
    for pair in pairs:
        one, four = load_runs(list(pair.files(results)))
        result = paired(one.records, four.records, "one at a time", "four slots")
        rows.append(
            [
                f"[{pair.name}](../results/{pair.page})",
                str(one.accuracy),
                took(one),
                str(four.accuracy),
                took(four),
                result.sentence(),
            ]
        )
    head = ["entry", "one at a time", "took", "four slots", "took", "four slots against one"]
    return table(head, rows) + "\n"


def verdicts(pairs: list[Pair], results: Path = RESULTS) -> str:
    """One row per pair: its page, each run's correct answers, and the verdict in words."""
    rows = []
    for pair in pairs:
        run_a, run_b = load_runs(list(pair.files(results)))
        result = paired(run_a.records, run_b.records, run_a.label, run_b.label,
                        pair.across_surfaces)  # fmt: skip
        rows.append(
            [
                f"[{pair.name}](../results/{pair.page})",
                f"{run_a.label}: {run_a.accuracy}",
                f"{run_b.label}: {run_b.accuracy}",
                result.sentence(),
            ]
        )
    return table(["pair", "A", "B", "B against A"], rows) + "\n"


def page(pair: Pair, results: Path = RESULTS) -> str:
    """The pair's own page."""
    return paired_table(*pair.files(results), across_surfaces=pair.across_surfaces)


def block_text(name: str, pairs: list[Pair], results: Path = RESULTS) -> str:
    """A docs block: the pairs' verdicts (the slots' with each run's time beside them)."""
    return slots_table(pairs, results) if name == "paired-slots" else verdicts(pairs, results)


def write(results: Path = RESULTS) -> list[Path]:
    """Every pair's page under ``results``, and the docs' tables of verdicts; a pair whose runs
    are not both there yet is left out."""
    written = []
    for pages, name, listed in BLOCKS:
        pairs = ready(listed, results)
        for pair in pairs:
            path = results / pair.page
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page(pair, results), encoding="utf-8")
            written.append(path)
        text = block_text(name, pairs, results)
        for doc in pages:
            fill(doc, name, text)
    return written
