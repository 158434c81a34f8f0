"""What the report says, before how it looks: which runs are the user's, the references each
is set against on the same task set (with the paired verdict in words), and each task set's
leaderboard, where runs of one configuration show once (the latest, with a count).

"Your run" is the newest run given (by its records' timestamps), or the runs named with
``--focus``. Its references are runs on the same task set, neither scripted nor superseded:
the default model under its environment's default preset, the default model's best run, and
each ladder model's best. "Best" is the most accurate, then the fewest model calls, then the
fewest tokens: figures that do not move with the machine's load; wall time is shown, never
ranked by.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals.record import is_error
from evals.registry import environment_of_record
from evals.report.compare import Run, per_question, rank, solver_of
from evals.report.pairing import PairingError, paired
from evals.stats import Accuracy, accuracy
from serve_local.public import DEFAULT_NAME, LADDER

# A task set's matrix and transcripts: your runs, the references, then the leaderboard's top
# rows, up to this many columns (the page stays a few megabytes on the committed results).
MATRIX_RUNS = 8
SCRIPTED = "scripted:"


def started(run: Run) -> str:
    """When the run began: its first record's timestamp (ISO 8601 sorts as text)."""
    stamps = [r.timestamp for r in run.records if r.timestamp]
    return min(stamps) if stamps else ""


def aside(run: Run) -> str | None:
    """Why a run is hidden unless asked for: scripted, superseded, or neither (None)."""
    if run.records[0].spec.model.startswith(SCRIPTED):
        return "scripted"
    if "superseded" in run.path.parts:
        return "superseded"
    return None


def configuration(run: Run) -> str:
    """What makes two runs repeats of one another: the model and its server's settings, the
    solver and its preset by name (a preset revised since is the same preset, its latest run
    standing for it), sampling, the loop's limits and the task set. A setting a record left
    out because it did not exist yet reads as its default."""
    s = run.records[0].spec
    loop = {k: v for k, v in (s.loop or {}).items() if v is not None}
    return json.dumps(
        [
            s.model, s.model_sha256, s.backend, s.tool_grammar, s.draft or "off",
            s.api or "openai", s.solver, s.solver_settings, s.preset.name if s.preset else None,
            s.temperature, loop, s.task_set, sorted({x.epoch for x in run.records}),
        ],
        sort_keys=True,
        default=str,
    )  # fmt: skip


@dataclass
class Entry:
    """One leaderboard row: a run, standing for the runs of its configuration."""

    run: Run
    index: int  # the run's place in the page: its matrix column and transcripts say it
    repeats: int = 1  # runs of this configuration given, this one the latest
    hidden: str | None = None  # "scripted" or "superseded": shown only when asked for
    focus: bool = False

    @property
    def accuracy(self) -> Accuracy:
        return self.run.accuracy

    @property
    def model(self) -> str:
        return self.run.records[0].spec.model

    @property
    def solver(self) -> str:
        return solver_of(self.run)

    @property
    def name(self) -> str:
        return f"{self.model} · {self.solver}"

    @property
    def turns(self) -> float | None:
        """Model calls per question, over the task runs that ended in an answer or a stop."""
        return per_question(self.run)[0]

    @property
    def tokens(self) -> float | None:
        return per_question(self.run)[1]

    @property
    def errors(self) -> int:
        return sum(is_error(r) for r in self.run.records)

    @property
    def turn_ms(self) -> float | None:
        value = self.run.summary.get("mean_turn_ms")
        return float(value) if value is not None else None

    @property
    def wall_s(self) -> float:
        return float(self.run.summary["wall_ms"]) / 1000

    @property
    def started(self) -> str:
        return started(self.run)

    def rank(self) -> tuple[float, float, float]:
        return rank(self.run)


@dataclass
class Reference:
    """A committed run the user's run is set against, and the paired verdict."""

    roles: list[str]
    entry: Entry
    verdict: str  # the paired comparison in full
    headline: str = ""  # its outcome in a few words
    detected: bool = False
    better: str | None = None  # "yours", "reference", or None


def anchor_of(task_set: str) -> str:
    return "set-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in task_set)


@dataclass
class Focus:
    """One of the user's runs and its references on the same task set."""

    entry: Entry
    task_set: str
    references: list[Reference] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return anchor_of(self.task_set)


@dataclass
class Section:
    """One task set: its leaderboard and the runs of its matrix."""

    task_set: str
    entries: list[Entry]  # the leaderboard, best first; hidden rows included
    matrix: list[Entry]  # the matrix's columns
    collapsed: int = 0  # runs not shown because a later run of their configuration is

    @property
    def anchor(self) -> str:
        return anchor_of(self.task_set)

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(r.task_id for e in self.matrix for r in e.run.records))


def task_set_of(run: Run) -> str:
    return str(run.records[0].spec.task_set or "(no task set)")


def _collapse(entries: Sequence[Entry]) -> list[Entry]:
    """One entry per configuration: the latest run, counting the others."""
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        groups.setdefault(configuration(e.run), []).append(e)
    kept = []
    for group in groups.values():
        group.sort(key=lambda e: (e.focus, e.started, e.index))
        latest = group[-1]
        latest.repeats = len(group)
        kept.append(latest)
    return kept


def _best(entries: Sequence[Entry]) -> Entry | None:
    return min(entries, key=lambda e: (e.rank(), e.index)) if entries else None


def references(focus: Entry, candidates: Sequence[Entry]) -> list[Reference]:
    """The runs ``focus`` is set against: the default model under its environment's default
    preset (the latest such run), the default model's best, each ladder model's best; one
    run filling several roles is listed once with all of them."""
    pool = [e for e in candidates if e.hidden is None and e.run is not focus.run]
    roles: dict[int, tuple[Entry, list[str]]] = {}

    def add(entry: Entry | None, role: str) -> None:
        if entry is not None:
            roles.setdefault(entry.index, (entry, []))[1].append(role)

    chosen = environment_of_record(focus.run.records[0]).default_preset
    default_runs = [e for e in pool if e.model == DEFAULT_NAME]
    plain = [e for e in default_runs if e.solver == f"agent ({chosen})"]
    add(max(plain, key=lambda e: (e.started, e.index)) if plain else None, "default model, "
        f"default preset ({chosen})")  # fmt: skip
    add(_best(default_runs), "default model, its best")
    for model in LADDER:
        if model != DEFAULT_NAME:
            add(_best([e for e in pool if e.model == model]), "ladder model, its best")
    found = []
    for entry, named in roles.values():
        try:
            verdict = paired(entry.run.records, focus.run.records, "the reference", "your run")
        except PairingError as exc:
            found.append(Reference(named, entry, str(exc), "not paired"))
            continue
        better, headline = None, "no difference detected"
        if verdict.detected:
            better = "yours" if verdict.difference > 0 else "reference"
            who = "your run" if better == "yours" else "the reference"
            headline = f"{who} is better by {abs(verdict.difference):.0f} points"
        elif verdict.detectable is not None:
            headline += f" (the set detects {verdict.detectable:.0f} points or more)"
        detail = (
            f"your run minus the reference: {round(verdict.difference):+d} points, 95 % CI "
            f"[{round(verdict.low)}, {round(verdict.high)}], exact test p = "
            f"{verdict.p_value:.2g}; of {verdict.tasks} tasks, {len(verdict.only_b)} right "
            f"only in your run, {len(verdict.only_a)} only in the reference"
        ).replace("+0 points", "0 points")
        found.append(Reference(named, entry, detail, headline, verdict.detected, better))
    return found


def _family(task_set: str) -> tuple[int, str]:
    order = ("files6", "gen-", "sql-")
    place = next((i for i, p in enumerate(order) if task_set.startswith(p)), len(order))
    return place, task_set


@dataclass
class Board:
    focus: list[Focus]
    sections: list[Section]
    entries: list[Entry]  # every run given, by index


def board(runs: Sequence[Run], focus_paths: Sequence[Path] = ()) -> Board:
    """The report's content: the focus runs with their references, then one section per task
    set (the focus runs' sets first)."""
    entries = [Entry(run, i, hidden=aside(run)) for i, run in enumerate(runs)]
    if not entries:
        return Board([], [], [])
    wanted = {p.resolve() for p in focus_paths}
    chosen = [e for e in entries if e.run.path.resolve() in wanted]
    if not chosen:
        chosen = [max(entries, key=lambda e: (e.started, e.index))]
    for e in chosen:
        e.focus = True
        e.hidden = None  # the user's own run is shown even where it is scripted
    by_set: dict[str, list[Entry]] = {}
    for e in entries:
        by_set.setdefault(task_set_of(e.run), []).append(e)
    focus = []
    for e in chosen:
        others = [o for o in by_set[task_set_of(e.run)] if not o.focus]
        focus.append(Focus(e, task_set_of(e.run), references(e, _collapse(others))))
    mine = list(dict.fromkeys(f.task_set for f in focus))
    sections = []
    for task_set in sorted(by_set, key=lambda s: (s not in mine, *_family(s))):
        rows = _collapse(by_set[task_set])
        rows.sort(key=lambda e: (e.rank(), e.index))
        columns: list[Entry] = [e for e in rows if e.focus]
        for f in focus:
            if f.task_set == task_set:
                columns += [r.entry for r in f.references]
        columns += [e for e in rows if e.hidden is None]
        matrix = list({e.index: e for e in columns}.values())[:MATRIX_RUNS]  # first place kept
        collapsed = len(by_set[task_set]) - len(rows)
        sections.append(Section(task_set, rows, matrix, collapsed))
    return Board(focus, sections, entries)


def accuracy_of_kind(entry: Entry, kind: str) -> Accuracy | None:
    mine = [r for r in entry.run.records if str(r.kind or r.task_id) == kind]
    return accuracy(mine) if mine else None
