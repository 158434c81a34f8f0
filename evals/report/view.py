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

import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from evals.bfcl.items import RELEVANCE
from evals.record import RunRecord, is_error, kept_file, read_text, run_files
from evals.record.bfcl import read_items
from evals.report import bfcl
from evals.report.board import Entry, Section, accuracy_of_kind, board
from evals.report.compare import Run, load_runs
from evals.report.stats import Accuracy, Proportion, pass_hat_curve, wilson
from evals.report.svg import Point, histogram, pass_curves, scatter
from harness.persist import StateFileError, parse
from harness.state import RunState, TurnRecord, asked_calls, new_run


@dataclass
class Call:
    call_id: str
    name: str
    arguments: str
    result: str | None = None
    ok: bool | None = None  # None: no tool result was recorded
    error: str | None = None
    decision: str | None = None  # the approval and its reason, in words


@dataclass
class Timing:
    prompt_n: int
    cache_n: int
    predicted_n: int
    ms: float
    scale: float  # this turn's tokens over the largest turn's in the transcript, for the bar

    def share(self, tokens: int) -> float:
        """A segment's width in percent of the bar's full length."""
        total = self.prompt_n + self.cache_n + self.predicted_n
        return round(100 * self.scale * tokens / total, 2) if total else 0.0


@dataclass
class Turn:
    index: int
    asked: list[str]  # user messages sent with this turn's request, after the task itself
    text: str
    calls: list[Call]
    finish_reason: str | None
    latency_ms: float | None
    timing: Timing | None


@dataclass
class Transcript:
    anchor: str
    run: int
    run_label: str
    task_id: str
    epoch: int
    status: str
    correct: bool
    system: str
    user: str
    turns: list[Turn]
    checks: list[dict[str, Any]]
    answer: str | None
    error: str | None
    interruption: dict[str, Any] | None
    files: list[str] = field(default_factory=list)  # the kept files this transcript came from
    # A conversation's: what the user said after the agent's last turn (its stop word), and
    # how the talk ended (its end, the user, the environment's reward where it gave one).
    closing: list[str] = field(default_factory=list)
    ended: str | None = None


@dataclass
class Cell:
    text: str
    correct: bool
    anchors: list[str]  # one transcript per epoch
    state: str = "pass"  # pass, fail, some (epochs disagree) or error


def _decision(key: str | None, state: RunState) -> str | None:
    """The approval given to a call (named by its key, turn.index), with the reason, in words."""
    if key in state.approved:
        return "approved"
    if key is not None and key in state.rejected:
        return f"rejected: {state.rejected[key] or '(no reason given)'}"
    return None


def _calls(
    message: dict[str, Any], results: dict[str, dict[str, Any]], state: RunState
) -> list[Call]:
    log = {r.call_id: r for r in state.tool_log}
    keys = {c.id: c.key for c in asked_calls(state)}
    calls = []
    for c in message.get("tool_calls") or []:
        call_id = c.get("id", "")
        function = c.get("function", {})
        calls.append(
            Call(
                call_id=call_id,
                name=function.get("name", ""),
                arguments=_pretty(function.get("arguments", "")),
                result=(results.get(call_id) or {}).get("content"),
                ok=log[call_id].ok if call_id in log else None,
                error=log[call_id].error if call_id in log else None,
                decision=_decision(keys.get(call_id), state),
            )
        )
    return calls


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except (json.JSONDecodeError, RecursionError, TypeError):
        return str(arguments)  # what the model sent, shown as sent


def _timings(records: list[TurnRecord]) -> list[Timing | None]:
    """Each turn's server timings, scaled to the transcript's largest turn."""

    def tokens(t: dict[str, Any]) -> int:
        return int(t.get("prompt_n", 0)) + int(t.get("cache_n", 0)) + int(t.get("predicted_n", 0))

    largest = max((tokens(r.timings) for r in records if r.timings), default=0)
    found: list[Timing | None] = []
    for r in records:
        t = r.timings
        if not t or not largest:
            found.append(None)
            continue
        found.append(
            Timing(
                prompt_n=int(t.get("prompt_n", 0)),
                cache_n=int(t.get("cache_n", 0)),
                predicted_n=int(t.get("predicted_n", 0)),
                ms=float(t.get("prompt_ms", 0)) + float(t.get("predicted_ms", 0)),
                scale=tokens(t) / largest,
            )
        )
    return found


def _kept_state(path: Path) -> RunState | None:
    """The run state kept in ``path``; None, with a warning naming the file, if it cannot be
    read (truncated, not JSON, not a state)."""
    try:
        return parse(read_text(path), path)
    except (OSError, EOFError, ValueError, StateFileError) as exc:
        # StateFileError names the file itself; one that cannot be read at all (a truncated
        # gzip, bytes that are not UTF-8) does not.
        why = str(exc).removeprefix(f"{path}: ")
        print(
            f"evals view: {path}: not a readable run state ({why}); its task is shown from "
            "its record alone",
            file=sys.stderr,
        )
        return None


def transcript(run: Run, index: int, number: int, record: RunRecord) -> Transcript:
    """One task run's transcript: from its state file when one was kept, else its record."""
    state_file = kept_file(run.path, f"{record.run_id}.json") if record.run_id else None
    # A task that never ran (the server had gone) kept no state, and a state file that cannot
    # be read is passed over with a warning: either way its record alone is shown.
    state = _kept_state(state_file) if state_file else None
    if state is None:
        state_file = None
        state = new_run(record.spec.model, record.question)
    results = {m.get("tool_call_id", ""): m for m in state.messages if m["role"] == "tool"}
    timings = _timings(state.turn_records)
    turns: list[Turn] = []
    asked: list[str] = []  # user messages since the last reply (a nudge, a conclude request)
    for message in state.messages[2 if state.messages[0]["role"] == "system" else 1 :]:
        if message["role"] == "user":
            asked.append(message.get("content") or "")
        if message["role"] != "assistant":
            continue
        i = len(turns)
        # Replies and turn records pair up one to one in a state the loop wrote.
        turn = state.turn_records[i] if i < len(state.turn_records) else None
        turns.append(
            Turn(
                index=i + 1,
                asked=asked,
                text=message.get("content") or "",
                calls=_calls(message, results, state),
                finish_reason=turn.finish_reason if turn else None,
                latency_ms=turn.latency_ms if turn else None,
                timing=timings[i] if turn else None,
            )
        )
        asked = []
    trace_file = kept_file(run.path, f"{record.run_id}.trace.jsonl") if state_file else None
    return Transcript(
        anchor=f"r{index}-{number}",
        run=index,
        run_label=run.label,
        task_id=record.task_id,
        epoch=record.epoch,
        status=record.status,
        correct=record.correct,
        system=next((m["content"] for m in state.messages if m["role"] == "system"), ""),
        user=next((m["content"] for m in state.messages if m["role"] == "user"), record.question),
        turns=turns,
        checks=record.checks,
        answer=record.answer,
        error=record.error,
        interruption=record.interruption,
        files=[str(p.name) for p in (state_file, trace_file) if p is not None],
        closing=asked + _unsent(record, state),
        ended=_ended(record),
    )


def _unsent(record: RunRecord, state: RunState) -> list[str]:
    """A conversation's user messages the agent never read: the one that ended it."""
    talk = record.conversation
    if talk is None or not talk.said:
        return []
    sent = sum(1 for m in state.messages if m["role"] == "user")
    return [t.text for t in talk.said[sent:]]


def _ended(record: RunRecord) -> str | None:
    talk = record.conversation
    if talk is None:
        return None
    user = "a script" if talk.user.scripted else (talk.user.model or "?")
    reward = getattr(record.environment, "reward", None)
    judged = "" if reward is None else f"; reward {reward:g}"
    return (
        f"conversation ended: {talk.end} after {talk.user_turns} user turns (user: {user}){judged}"
    )


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
