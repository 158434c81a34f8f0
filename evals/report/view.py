"""``python -m evals view``: run files as one self-contained HTML report.

It opens on the user's question: the newest run (or those named with ``--focus``) beside the
reference runs on the same task set, each with the paired verdict in words (``board.py`` says
which runs those are). Then one section per task set: a leaderboard where runs of one
configuration show once (scripted and superseded runs only when asked for), accuracy against
latency per model call with the Pareto front, and a matrix of tasks by runs whose every cell
opens that task run's transcript, read from the state file and trace kept beside the run file.
Everything the page needs is inlined, so it opens from ``file://`` with no network.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from evals.bfcl.items import RELEVANCE
from evals.record import RunRecord, is_error, run_files
from evals.record.bfcl import read_items
from evals.report import bfcl
from evals.report.board import Entry, Section, accuracy_of_kind, board
from evals.report.compare import load_runs
from evals.report.svg import Point, histogram, pass_curves, scatter
from evals.report.transcripts import Transcript, transcript
from evals.stats import Accuracy, Proportion, pass_hat_curve, wilson


@dataclass
class Cell:
    text: str
    correct: bool
    anchors: list[str]  # one transcript per epoch
    state: str = "pass"  # pass, fail, some (epochs disagree) or error


def _cell(transcripts: list[Transcript], records: list[RunRecord]) -> Cell:
    """A matrix cell: right, wrong, or error (the machinery ended every epoch), with the turns
    and the mean latency per model call; several epochs show right of all."""
    answered = [r for r in records if not is_error(r)]
    correct = sum(r.correct for r in answered)
    if not answered:
        mark, state = "!", "error"
    elif len(records) == 1:
        mark, state = ("✓", "pass") if correct else ("✗", "fail")
    else:
        mark = f"{correct}/{len(records)}"
        state = "pass" if correct == len(records) else ("fail" if not correct else "some")
    turns = statistics.fmean(r.turns for r in records)
    latencies = [ms for r in records for ms in r.turn_latency_ms]
    ms = f"{statistics.fmean(latencies):,.0f} ms" if latencies else "–"
    return Cell(
        text=f"{mark} {turns:g} turns {ms}",
        correct=state == "pass",
        anchors=[t.anchor for t in transcripts],
        state=state,
    )


@dataclass
class SectionView:
    """A task set as the page draws it."""

    section: Section
    grid: dict[str, list[Cell | None]]
    kinds: list[str]
    kind_table: dict[str, list[Accuracy | None]]
    scatter: Markup
    turns: list[Markup]  # one histogram per matrix column
    # pass^k against k for the runs whose tasks were tried more than once (empty otherwise).
    pass_k: Markup = field(default_factory=Markup)

    def bar(self, entry: Entry) -> dict[str, float]:
        """An accuracy's interval and rate on a 0-100 % bar, in percent."""
        a = entry.accuracy
        low, high = 100 * a.low, 100 * a.high
        return {
            "left": round(low, 2),
            "width": round(high - low, 2),
            "point": round(100 * a.rate, 2),
        }


def kind_of(record: RunRecord) -> str:
    return str(record.kind or record.task_id)


def _section_view(
    section: Section, transcripts: dict[int, list[Transcript]], focus: set[int], refs: set[int]
) -> SectionView:
    grid: dict[str, list[Cell | None]] = {}
    for task in section.tasks:
        row: list[Cell | None] = []
        for e in section.matrix:
            records = [r for r in e.run.records if r.task_id == task]
            mine = [t for t in transcripts[e.index] if t.task_id == task]
            row.append(_cell(mine, records) if records else None)
        grid[task] = row
    kinds = list(dict.fromkeys(kind_of(r) for e in section.matrix for r in e.run.records))
    kind_table = {k: [accuracy_of_kind(e, k) for e in section.matrix] for k in kinds}
    points = [
        Point(
            f"{e.name} ({e.run.label})",
            e.turn_ms,
            e.accuracy.rate,
            "focus" if e.index in focus else ("reference" if e.index in refs else ""),
        )
        for e in section.entries
        if e.turn_ms is not None and (e.hidden is None or e.index in focus)
    ]
    largest = max((r.turns for e in section.matrix for r in e.run.records), default=0)
    turns = [
        histogram(
            [r.turns for r in e.run.records if not is_error(r)],
            largest,
            f"turns per task, {e.run.label}",
        )
        for e in section.matrix
    ]
    title = f"{section.task_set}: accuracy against mean ms per model call"
    curves = [
        (f"{e.name} ({e.run.label})", list(pass_hat_curve(e.run.records).values()))
        for e in section.matrix
    ]
    return SectionView(
        section, grid, kinds, kind_table, scatter(points, title), turns,
        pass_curves(curves, f"{section.task_set}: pass^k against k"),
    )  # fmt: skip


@dataclass
class BfclRow:
    """One BFCL run (or a published model's figures) by category."""

    name: str
    model: str
    settings: str
    rates: dict[str, Proportion | None]  # a run's rates; None where it ran no item there
    published: dict[str, float | None] = field(default_factory=dict)  # in percent
    errors: int = 0


@dataclass
class BfclView:
    categories: list[str]  # the call categories first, relevance after
    rows: list[BfclRow]
    note: str
    relevance: list[str]  # those of ``categories`` about whether to call at all


def bfcl_view(folder: Path | None) -> BfclView | None:
    """BFCL's single-turn runs by category as its AST checker judged them, each rate with its
    95 % Wilson interval; relevance apart from the call categories, as BFCL keeps it."""
    if folder is None:
        return None
    runs = [(f, read_items(f)) for f in run_files([folder])]
    runs = [(f, items) for f, items in runs if items]
    if not runs:
        return None
    categories = bfcl.categories_of([i for _, items in runs for i in items])
    rows = []
    for path, items in runs:
        summary = bfcl.summarize(items)
        rates: dict[str, Proportion | None] = {}
        for c in categories:
            rate = summary["categories"].get(c)
            rates[c] = None if not rate or not rate["n"] else wilson(rate["correct"], rate["n"])
        cap = summary.get("max_tokens")
        rows.append(
            BfclRow(
                name=path.stem,
                model=str(summary["model"]),
                settings=f"tool grammar {summary['tool_grammar']}, reply cap "
                + ("default" if cap is None else str(cap)),
                rates=rates,
                errors=int(summary["request_errors"]),
            )
        )
    for entry in bfcl.published()["models"]:
        rows.append(
            BfclRow(
                name=f"published: {entry['model']}",
                model="",
                settings="",
                rates={},
                published={c: bfcl.published_figure(entry, c) for c in categories},
            )
        )
    return BfclView(categories, rows, bfcl.source_note(), [c for c in categories if c in RELEVANCE])


def render(paths: Sequence[Path], focus: Sequence[Path] = (), bfcl: Path | None = None) -> str:
    runs = load_runs(paths, skip_unreadable=True)
    made = board(runs, focus)
    transcripts: dict[int, list[Transcript]] = {}
    for section in made.sections:
        for e in section.matrix:
            if e.index not in transcripts:
                transcripts[e.index] = [
                    transcript(e.run, e.index, n, r) for n, r in enumerate(e.run.records)
                ]
    mine = {f.entry.index for f in made.focus}
    refs = {r.entry.index for f in made.focus for r in f.references}
    views = [_section_view(s, transcripts, mine, refs) for s in made.sections]
    env = Environment(
        loader=PackageLoader("evals.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(
        runs=runs,
        board=made,
        sections=views,
        transcripts=[t for ts in transcripts.values() for t in ts],
        asides=sum(e.hidden is not None for s in made.sections for e in s.entries),
        bfcl=bfcl_view(bfcl),
    )


def write_report(
    paths: Sequence[Path], out: Path, focus: Sequence[Path] = (), bfcl: Path | None = None
) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(paths, focus, bfcl), encoding="utf-8")
    return out
