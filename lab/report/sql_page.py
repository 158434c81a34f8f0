"""The SQL analyst's page (``make sql-report``): the sql runs side by side, each beside the
chapter's figures (:mod:`evals.database.figures`), and each named pair compared task by task."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.database.figures import database_kind, database_of, figures, markdown, side_by_side
from evals.markdown import table
from evals.record import RunRecord, is_error, read_runs
from evals.report.compare import load_runs
from evals.report.pairing import paired
from evals.stats import wilson
from lab.report.analyst_answers import ladder_table, story_table

ROOT = Path(__file__).resolve().parents[2]
SQL = ROOT / "results" / "sql"
SUMMARY = SQL / "summary.md"
DOCS = ROOT / "docs" / "sql.md"
# docs/sql.md's table: the default model's runs it sets beside the chapter, as it names them.
DOCS_RUNS = [
    ("qwen-coder-1.5b-analyst-hinted", "the default model, `analyst`, 60 questions"),
    ("qwen-coder-1.5b-analyst-schema", "the default model, `analyst-schema` (the schema in the "
     "system prompt)"),
]  # fmt: skip


def docs_table(folder: Path = SQL) -> str:
    """docs/sql.md's table: the chapter's figures beside the default model's two runs."""
    columns = []
    for stem, name in DOCS_RUNS:
        (run,) = load_runs([folder / f"{stem}.jsonl"])
        columns.append((name, figures(run.records) or {}))
    return side_by_side(columns)


# docs/sql.md's other blocks, each from run files under results/sql/ (stems, as the page
# names them).
STORY_RUNS = [
    ("qwen-coder-1.5b-analyst-hinted", "`analyst`"),
    ("qwen-coder-1.5b-analyst-plain", "`--error-hints plain`"),
    ("qwen-coder-1.5b-analyst-hinted-postgresql", "`analyst` on PostgreSQL"),
    ("qwen-coder-1.5b-analyst-schema", "`analyst-schema`"),
    ("dev/qwen-coder-1.5b-analyst-schema-dev", "`analyst-schema`, dev"),
    ("dev/qwen-coder-1.5b-analyst-query-first-dev", "`analyst-query-first`, dev"),
]
DOCS_PAIRS = [
    ("qwen-coder-1.5b-analyst-hinted", "qwen-coder-1.5b-analyst-schema"),
    ("qwen-coder-1.5b-analyst-hinted", "qwen-coder-1.5b-analyst-plain"),
    ("qwen-coder-1.5b-analyst-hinted", "qwen-coder-1.5b-analyst-one-call"),
    ("qwen-coder-1.5b-analyst-hinted", "qwen-coder-1.5b-analyst-hinted-postgresql"),
    ("dev/qwen-coder-1.5b-analyst-schema-dev", "dev/qwen-coder-1.5b-analyst-query-first-dev"),
]
DEFAULT_60 = "qwen-coder-1.5b-analyst-hinted"
LADDER_22 = [
    ("Qwen2.5-Coder-1.5B-Instruct", DEFAULT_60),
    ("Qwen2.5-Coder-0.5B-Instruct",
     "runs/20261201-152843-sweep-qwen2.5-coder-0.5b-instruct-analyst"),
    ("SmolLM2-135M-Instruct", "runs/20261201-155658-sweep-smollm2-135m-instruct-analyst"),
]  # fmt: skip
LADDER_60 = [
    ("Qwen2.5-Coder-1.5B-Instruct", DEFAULT_60),
    ("Qwen2.5-Coder-0.5B-Instruct", "ladder-qwen2.5-coder-0.5b-instruct-analyst"),
    ("SmolLM2-135M-Instruct", "ladder-smollm2-135m-instruct-analyst"),
]
TWENTY_TWO = ROOT / "evals" / "tasks" / "sql-test-s1000-n22.json"


def _records(folder: Path, stem: str) -> list[RunRecord]:
    return read_runs(folder / f"{stem}.jsonl")


def _first_22(records: list[RunRecord]) -> list[RunRecord]:
    """The records of the 22 questions the ladder's short runs asked (the first two of each
    kind), whichever run they come from."""
    ids = {t["id"] for t in json.loads(TWENTY_TWO.read_text(encoding="utf-8"))["tasks"]}
    return [r for r in records if r.task_id in ids]


def docs_blocks(folder: Path = SQL) -> list[tuple[str, str]]:
    """Every block of docs/sql.md written from the committed sql runs: (name, text)."""
    paths = [folder / f"{stem}.jsonl" for stem, _ in STORY_RUNS]
    stories = [(name, _records(folder, stem)) for stem, name in STORY_RUNS]
    ladder = [
        *((m, "first 22", _first_22(_records(folder, stem))) for m, stem in LADDER_22),
        *((m, "all 60", _records(folder, stem)) for m, stem in LADDER_60),
    ]
    pairs = [(folder / f"{a}.jsonl", folder / f"{b}.jsonl") for a, b in DOCS_PAIRS]
    runs = load_runs(sorted({*paths, *(p for pair in pairs for p in pair)}))
    return [
        ("sql-chapter", docs_table(folder)),
        ("sql-runs", runs_table(runs) + "\n"),
        ("sql-paired", "\n".join(paired_lines(runs, pairs)) + "\n"),
        ("sql-kinds", kinds_table(runs) + "\n"),
        ("sql-story", story_table(stories) + "\n"),
        ("sql-ladder", ladder_table(ladder) + "\n"),
    ]


def _model(run: Any) -> str:
    return str(run.summary.get("model") or "?")


def runs_table(runs: Sequence[Any]) -> str:
    """One row per sql run: its model, database, correct answers and the analyst's figures."""
    head = [
        "run", "model", "database", "correct", "median steps", "SQL error",
        "recovered next step", "timeouts", "cap reached", "median wall s",
    ]  # fmt: skip
    rows = []
    for r in runs:
        f = figures(r.records) or {}
        rows.append(
            [
                r.label,
                f"`{_model(r)}`",
                database_kind(database_of(r.records[0])),
                f"{f['correct']}/{f['questions']}, "
                f"{wilson(f['correct'], f['questions']).interval()}",
                f"{f['median_steps']:g}",
                f"{f['questions_with_error']}/{f['questions']}",
                f"{f['recovered_next_step']}/{f['questions_with_error']}",
                f["statement_timeouts"],
                f["cap_reached"],
                f"{f['median_wall_ms'] / 1000:,.1f}",
            ]
        )
    return table(head, rows)


def paired_lines(runs: Sequence[Any], pairs: Sequence[tuple[Path, Path]]) -> list[str]:
    """Each named pair compared task by task (the exact test on the questions where they
    differ), one list item each."""
    by_path = {r.path.resolve(): r for r in runs}
    lines = []
    for path_a, path_b in pairs:
        a, b = by_path.get(path_a.resolve()), by_path.get(path_b.resolve())
        if a is None or b is None:
            missing = path_a if a is None else path_b
            lines.append(f"- {missing}: not among the run files given.")
            continue
        result = paired(a.records, b.records, a.label, b.label)
        lines.append(f"- **{b.label} against {a.label}**: {result.sentence()}.")
    return lines


def kinds_table(runs: Sequence[Any]) -> str:
    """Correct answers per kind of question, one column per run."""
    kinds = sorted({r.kind or "?" for run in runs for r in run.records})
    rows = []
    for kind in kinds:
        cells = []
        for run in runs:
            mine = [r for r in run.records if (r.kind or "?") == kind and not is_error(r)]
            cells.append(f"{sum(r.correct for r in mine)}/{len(mine)}" if mine else "–")
        rows.append([kind, *cells])
    return table(["kind", *[r.label for r in runs]], rows)


def report(paths: Sequence[Path], pairs: Sequence[tuple[Path, Path]]) -> str:
    """The sql runs side by side, each beside the chapter's figures, and each named pair
    compared task by task (the exact test on the questions where they differ)."""
    runs = [r for r in load_runs(paths) if figures(r.records) is not None]
    if not runs:
        return "No sql run files.\n"
    sets = sorted({str(r.records[0].spec.task_set) for r in runs})
    lines = [
        "# The SQL analyst",
        "",
        f"Task set {', '.join(sets)}: an analyst's questions about a generated bank, asked of a "
        "read-only database through `run_sql` and `describe`. Rebuilt from the run files by "
        "`make sql-report`.",
        "",
        runs_table(runs),
        "",
    ]
    if pairs:
        lines += ["## Paired comparisons", ""]
        lines += [f"{line}\n" for line in paired_lines(runs, pairs)]
    lines += ["## Per kind of question", "", kinds_table(runs), ""]
    for run in runs:
        lines += [
            f"## {run.label}",
            "",
            f"Model `{_model(run)}` (sha256 `{run.summary.get('model_sha256')}`), preset "
            f"`{(run.summary.get('preset') or {}).get('name')}`, run file `{run.path}`.",
            "",
            markdown(figures(run.records) or {}),
            "",
        ]
    return "\n".join(lines)
