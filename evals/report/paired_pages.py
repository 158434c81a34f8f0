"""The paired comparisons the docs quote (``make paired``): each named pair of committed runs,
A the baseline, written to ``results/paired/NAME.md`` by :func:`evals.report.compare.paired_table`,
and one table of their verdicts for the pages that quote them (docs/policies.md,
docs/compare.md). A test builds both again from the run files."""

from __future__ import annotations

from pathlib import Path

from evals.report.compare import load_runs, paired_table
from evals.report.docs import fill
from evals.report.markdown import table
from evals.report.stats import paired

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "results" / "runs"
OUT = ROOT / "results" / "paired"
PAGES = [ROOT / "docs" / "policies.md", ROOT / "docs" / "compare.md"]
BLOCK = "paired-policies"
_S = "sweep-qwen2.5-coder-1.5b-instruct"
# Each pair: (name, the baseline run A, run B), run files under results/runs/ by stem.
PAIRS = [
    ("files6-1.5b-all-helps-vs-read-first",
     f"20261201-012944-{_S}-all-helps", f"20261201-012919-{_S}-read-first"),
    ("files6-1.5b-all-helps-vs-read-listed",
     f"20261201-012944-{_S}-all-helps", f"20261201-025200-{_S}-read-listed"),
    ("files6-1.5b-penalized-vs-all-helps",
     f"20261130-211453-{_S}-penalized", f"20261130-212233-{_S}-all-helps"),
    ("files6-1.5b-read-first-vs-read-listed",
     f"20261201-012919-{_S}-read-first", f"20261201-025200-{_S}-read-listed"),
    ("gen-test-1.5b-all-helps-vs-read-first",
     "20261130-213246-gen-test-qwen2.5-coder-1.5b-all-helps",
     "20261201-014502-gen-test-qwen2.5-coder-1.5b-read-first"),
    ("gen-test-1.5b-all-helps-vs-read-listed",
     "20261130-213246-gen-test-qwen2.5-coder-1.5b-all-helps",
     "20261201-025405-gen-test-qwen2.5-coder-1.5b-read-listed"),
    ("gen-test-1.5b-read-first-vs-read-listed",
     "20261201-014502-gen-test-qwen2.5-coder-1.5b-read-first",
     "20261201-025405-gen-test-qwen2.5-coder-1.5b-read-listed"),
    ("gen-test-qwen-0.5b-vs-1.5b",
     "20261130-220905-gen-test-qwen2.5-coder-0.5b-all-helps",
     "20261130-213246-gen-test-qwen2.5-coder-1.5b-all-helps"),
]  # fmt: skip


def _files(a: str, b: str, runs: Path) -> tuple[Path, Path]:
    return runs / f"{a}.jsonl", runs / f"{b}.jsonl"


def verdicts(runs: Path = RUNS) -> str:
    """One row per pair: its page, each run's correct answers, and the verdict in words."""
    rows = []
    for name, a, b in PAIRS:
        run_a, run_b = load_runs(list(_files(a, b, runs)))
        result = paired(run_a.records, run_b.records, run_a.label, run_b.label)
        rows.append(
            [
                f"[{name}](../results/paired/{name}.md)",
                f"{run_a.label}: {run_a.accuracy}",
                f"{run_b.label}: {run_b.accuracy}",
                result.sentence(),
            ]
        )
    return table(["pair", "A", "B", "B against A"], rows) + "\n"


def pages(runs: Path = RUNS) -> dict[str, str]:
    """Each pair's page, by name."""
    return {name: paired_table(*_files(a, b, runs)) for name, a, b in PAIRS}


def write(out: Path = OUT) -> list[Path]:
    """Every pair's page under ``out``, and the docs' table of verdicts."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages().items():
        path = out / f"{name}.md"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    text = verdicts()
    for page in PAGES:
        fill(page, BLOCK, text)
    return written
