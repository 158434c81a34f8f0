"""The SQL analyst's page (``make sql-report``): the sql runs side by side, each beside the
chapter's figures (:mod:`evals.report.analyst`), and each named pair compared task by task."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.record import is_error
from evals.report.analyst import database_kind, database_of, figures, markdown, side_by_side
from evals.report.compare import load_runs
from evals.report.markdown import table
from evals.report.stats import paired, wilson

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "results" / "sql" / "summary.md"
DOCS = ROOT / "docs" / "sql.md"
# docs/sql.md's table: the default model's runs it sets beside the chapter, as it names them.
DOCS_RUNS = [
    ("qwen-coder-1.5b-analyst-hinted", "the default model, `analyst`, 60 questions"),
    ("qwen-coder-1.5b-analyst-schema", "the default model, `analyst-schema` (the schema in the "
     "system prompt)"),
]  # fmt: skip


def docs_table(folder: Path = ROOT / "results" / "sql") -> str:
    """docs/sql.md's table: the chapter's figures beside the default model's two runs."""
    columns = []
    for stem, name in DOCS_RUNS:
        (run,) = load_runs([folder / f"{stem}.jsonl"])
        columns.append((name, figures(run.records) or {}))
    return side_by_side(columns)


def _model(run: Any) -> str:
    return str(run.summary.get("model") or "?")


def report(paths: Sequence[Path], pairs: Sequence[tuple[Path, Path]]) -> str:
    """The sql runs side by side, each beside the chapter's figures, and each named pair
    compared task by task (the exact test on the questions where they differ)."""
    runs = [r for r in load_runs(paths) if figures(r.records) is not None]
    if not runs:
        return "No sql run files.\n"
    by_path = {r.path.resolve(): r for r in runs}
    per_run = [(r, figures(r.records) or {}) for r in runs]
    sets = sorted({str(r.records[0].spec.task_set) for r in runs})
    head = [
        "run", "model", "database", "correct", "median steps", "SQL error",
        "recovered next step", "timeouts", "cap reached", "median wall s",
    ]  # fmt: skip
    rows = [
        [
            r.label,
            f"`{_model(r)}`",
            database_kind(database_of(r.records[0])),
            f"{f['correct']}/{f['questions']}, {wilson(f['correct'], f['questions']).interval()}",
            f"{f['median_steps']:g}",
            f"{f['questions_with_error']}/{f['questions']}",
            f"{f['recovered_next_step']}/{f['questions_with_error']}",
            f["statement_timeouts"],
            f["cap_reached"],
            f"{f['median_wall_ms'] / 1000:,.1f}",
        ]
        for r, f in per_run
    ]
    lines = [
        "# The SQL analyst",
        "",
        f"Task set {', '.join(sets)}: an analyst's questions about a generated bank, asked of a "
        "read-only database through `run_sql` and `describe`. Rebuilt from the run files by "
        "`make sql-report`.",
        "",
        table(head, rows),
        "",
    ]
    if pairs:
        lines += ["## Paired comparisons", ""]
    for path_a, path_b in pairs:
        a, b = by_path.get(path_a.resolve()), by_path.get(path_b.resolve())
        if a is None or b is None:
            missing = path_a if a is None else path_b
            lines += [f"- {missing}: not among the run files given.", ""]
            continue
        result = paired(a.records, b.records, a.label, b.label)
        lines += [f"- **{b.label} against {a.label}**: {result.sentence()}.", ""]
    lines += ["## Per kind of question", ""]
    kinds = sorted({r.kind or "?" for run in runs for r in run.records})
    kind_rows = []
    for kind in kinds:
        cells = []
        for run in runs:
            mine = [r for r in run.records if (r.kind or "?") == kind and not is_error(r)]
            cells.append(f"{sum(r.correct for r in mine)}/{len(mine)}" if mine else "–")
        kind_rows.append([kind, *cells])
    lines += [table(["kind", *[r.label for r in runs]], kind_rows), ""]
    for run, f in per_run:
        lines += [
            f"## {run.label}",
            "",
            f"Model `{_model(run)}` (sha256 `{run.summary.get('model_sha256')}`), policy "
            f"`{(run.summary.get('policy') or {}).get('name')}`, run file `{run.path}`.",
            "",
            markdown(f),
            "",
        ]
    return "\n".join(lines)
