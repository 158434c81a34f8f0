"""The labelled samples of a conversation run's user turns: whole conversations drawn at
random (``python -m lab tau2-sample``), labelled by reading (docs/tau2-user-rubric.md), then
counted by conversation, two readers compared, and the rules of ``lab.report.users`` set
beside the labels; ``sample_text`` says all of it in a paragraph of docs/tau2.md."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.record import RunRecord, UserTurn, read_runs
from evals.stats import wilson
from lab.report.users import NOT_JUDGED, acts, flags

# The labelled sample: whole conversations drawn at random (a stated seed) from committed
# conversation runs, written turn by turn without rewards or rule flags, then labelled by
# reading each user turn against its scenario and the agent's words before it.
LABELS = ("ok", "error")
# A sample's second reader's labels, beside it: ``SAMPLE.second-reader.jsonl``.
SECOND_READER = ".second-reader.jsonl"


def sample_turns(
    runs: Sequence[tuple[str, Sequence[RunRecord]]],
    scenarios: dict[str, str],
    conversations: int,
    seed: int,
    exclude: frozenset[str] = frozenset(),
) -> list[dict[str, object]]:
    """``conversations`` whole conversations drawn at random with ``seed`` from the runs'
    finished ones (every one when they hold fewer): the conversation is the unit drawn, one
    row per user turn in order, with what its label needs (the agent's words before it; the
    scenario on the conversation's first row, the turns before it in the rows before) and no
    reward, verdict or rule flag. ``exclude``: conversations (``RUN/TASK/eEPOCH``) left out,
    those of a sample already read, so a new one is held out."""
    import random

    talks = [
        (name, r)
        for name, records in runs
        for r in records
        if r.conversation is not None and r.conversation.said and r.status not in NOT_JUDGED
        and f"{name}/{r.task_id}/e{r.epoch}" not in exclude
    ]  # fmt: skip
    order = random.Random(seed).sample(range(len(talks)), len(talks))
    rows: list[dict[str, object]] = []
    for index in order[:conversations]:
        name, r = talks[index]
        assert r.conversation is not None
        said = r.conversation.said
        for i, turn in enumerate(said, start=1):
            # The scenario once, on the first turn: a conversation held to τ²'s 200 steps
            # has a hundred user turns, and every row repeating it (and the turns before
            # it) made a sample of one such run tens of megabytes.
            first = {"scenario": scenarios.get(r.task_id, "")} if i == 1 else {}
            rows.append(
                {
                    "conversation": f"{name}/{r.task_id}/e{r.epoch}",
                    "turn": i,
                    **first,
                    "replying_to": turn.replying_to,
                    "calls_before": turn.calls_before,
                    "text": turn.text,
                    "label": None,
                    "why": None,
                }
            )
    return rows


@dataclass(frozen=True)
class Erred:
    """A labelled sample counted by conversation: conversations with a label on every turn,
    those with a turn labelled an error, and the turn each one's first error is on."""

    conversations: int
    erred: int
    first_error: dict[int, int]  # turn of the first error: conversations
    labelled: frozenset[str] = frozenset()  # the conversations counted


def by_conversation(labelled: Sequence[dict[str, object]]) -> Erred:
    """Whether the user erred in each conversation of a labelled sample (one whose every
    turn is labelled), and where first."""
    turns: dict[str, list[tuple[int, object]]] = {}
    for row in labelled:
        turns.setdefault(str(row["conversation"]), []).append(
            (int(str(row["turn"])), row.get("label"))
        )
    done = {k: sorted(v) for k, v in turns.items() if all(label in LABELS for _, label in v)}
    first: Counter[int] = Counter()
    for rows in done.values():
        errors = [turn for turn, label in rows if label == "error"]
        if errors:
            first[errors[0]] += 1
    return Erred(len(done), sum(first.values()), dict(sorted(first.items())), frozenset(done))


@dataclass(frozen=True)
class Readers:
    """Two readers' labels of one sample, compared: on turns either called ``ok`` (where
    agreement is not the default that all-error turns make it), and by conversation."""

    either_ok: int  # turns both labelled, at least one of them ``ok``
    both_ok: int  # of those, turns both called ``ok``
    turns: int  # turns both labelled
    same_turns: int
    conversations: int  # conversations both labelled whole
    same_conversations: int  # of those, both say the user erred, or both that it did not


def readers(first: Sequence[dict[str, object]], second: Sequence[dict[str, object]]) -> Readers:
    def key(row: dict[str, object]) -> tuple[str, int]:
        return str(row["conversation"]), int(str(row["turn"]))

    other = {key(r): r.get("label") for r in second}
    both = [(r.get("label"), other[key(r)]) for r in first
            if r.get("label") in LABELS and other.get(key(r)) in LABELS]  # fmt: skip
    either = [(a, b) for a, b in both if "ok" in (a, b)]
    mine, theirs = _erred_by_talk(first), _erred_by_talk(second)
    talks = mine.keys() & theirs.keys()
    return Readers(
        either_ok=len(either),
        both_ok=sum(a == b for a, b in either),
        turns=len(both),
        same_turns=sum(a == b for a, b in both),
        conversations=len(talks),
        same_conversations=sum(mine[t] == theirs[t] for t in talks),
    )


def _erred_by_talk(rows: Sequence[dict[str, object]]) -> dict[str, bool]:
    """Each conversation labelled whole: whether a turn of it is labelled an error."""
    labels: dict[str, list[object]] = {}
    for row in rows:
        labels.setdefault(str(row["conversation"]), []).append(row.get("label"))
    return {k: "error" in v for k, v in labels.items() if all(x in LABELS for x in v)}


@dataclass(frozen=True)
class Agreement:
    """The labelled sample against the rules: turns labelled, labelled errors, and how the
    rules' flags meet the labels."""

    labelled: int
    errors: int
    flagged_errors: int  # errors a rule flagged
    flagged_ok: int  # turns labelled ok that a rule flagged


def _turn(row: dict[str, object]) -> UserTurn:
    return UserTurn(
        text=str(row["text"]),
        calls_before=int(str(row.get("calls_before") or 0)),
        replying_to=None if row.get("replying_to") is None else str(row["replying_to"]),
    )


def agreement(
    labelled: Sequence[dict[str, object]], acting: dict[str, bool] | None = None
) -> Agreement:
    """The rules applied to each labelled turn in its conversation (its scenario, the turns
    and the agent's words before it) beside its label; ``acting``: by conversation, whether
    its task's reward rests on what the agent does (``acts`` of its record; unknown: it
    does)."""
    labelled_n = errors = flagged_errors = flagged_ok = 0
    # Each conversation's rows in turn order: its scenario is on its first row, the turns
    # before a row are the rows before it. A sample drawn before rows stopped repeating them
    # holds both on every row instead.
    talks: dict[str, list[dict[str, object]]] = {}
    for row in labelled:
        talks.setdefault(str(row["conversation"]), []).append(row)
    for name, talk in talks.items():
        talk.sort(key=lambda r: int(str(r["turn"])))
        scenario = str(next((r["scenario"] for r in talk if r.get("scenario")), ""))
        acts = (acting or {}).get(name, True)
        # The rules read a turn with the turns before it only, so one pass over the whole
        # conversation flags each turn as a pass over its rows up to it would.
        whole = {f.turn for f in flags(scenario, [_turn(r) for r in talk], acts=acts)}
        for i, row in enumerate(talk):
            if row.get("label") not in LABELS:
                continue
            if "earlier" in row:
                earlier = [UserTurn.model_validate(t) for t in row.get("earlier") or []]  # type: ignore[attr-defined]
                found = flags(str(row.get("scenario") or scenario), [*earlier, _turn(row)], acts)
                flagged = any(f.turn == len(earlier) + 1 for f in found)
            else:
                flagged = i + 1 in whole
            labelled_n += 1
            if row["label"] == "error":
                errors += 1
                flagged_errors += flagged
            else:
                flagged_ok += flagged
    return Agreement(labelled_n, errors, flagged_errors, flagged_ok)


def _labelled(path: Path) -> list[dict[str, Any]]:
    """A labelled sample's rows (one user turn each)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def sample_text(
    path: Path, heldout: bool = False, runs: Mapping[str, Sequence[RunRecord]] | None = None
) -> str:
    """A labelled sample (``tau2-sample``, labelled by the rubric, docs/tau2-user-rubric.md),
    counted by conversation: in how many the user erred, with its interval, where its first
    error fell; a second reader's agreement (``*.second-reader.jsonl``) by conversation and on
    the turns either called ok; how the rules meet the labels (``heldout``: turns the rules
    were never written from, so their error rate; else the sample they were fitted to).
    ``runs``: the sampled runs' records by name, where already read (else read from beside
    the sample's folder)."""
    if not path.exists():
        return "No sample is labelled yet.\n"
    rows = _labelled(path)
    talks = by_conversation([row for row in rows if "turn" in row])
    # Only conversations labelled whole are counted, turns and all.
    turns = [row for row in rows if "turn" in row and row["conversation"] in talks.labelled]
    if not talks.conversations:
        return "No sample is labelled yet.\n"
    rate = wilson(talks.erred, talks.conversations)
    first = talks.first_error.get(1, 0)
    names = sorted({str(row["conversation"]).split("/")[0] for row in turns})
    text = (
        f"{talks.conversations} conversations ({len(turns)} user turns) drawn at random "
        f"(`{path.name}`) from {', '.join(f'`{r}`' for r in names)}, each turn labelled "
        "before any reward was looked at: the user erred "
        f"in {talks.erred} of {talks.conversations} conversations, {rate.interval()} (95 % "
        f"interval, the conversation the unit), at its first message in {first} of them."
    )
    second = path.with_suffix(SECOND_READER)
    if second.exists():
        both = readers(turns, [row for row in _labelled(second) if "turn" in row])
        text += (
            f" A second reader, labelling apart, agrees on whether the user erred in "
            f"{both.same_conversations} of {both.conversations} conversations"
            + (
                f"; of the {both.either_ok} turns either reader called ok, both did on "
                f"{both.both_ok}."
                if both.either_ok
                else "; neither called any turn ok."
            )
        )
    found = agreement(turns, _acting(path.parent.parent, names, runs))
    ok = found.labelled - found.errors
    if found.errors:
        # Counts of turns, no interval: turns of one conversation are not independent draws.
        text += (
            (" The rules, never written from these turns, flag " if heldout else
             " The rules, written after reading this sample (how well they fit it, not their "
             "error rate), flag ")
            + f"{found.flagged_errors} of the {found.errors} turns labelled errors"
            + (f" and {found.flagged_ok} of the {ok} labelled ok." if ok
               else "; no turn was labelled ok.")
        )  # fmt: skip
    faults = Counter(str(row["fault"]) for row in rows if "fault" in row)
    if faults:
        text += (
            f" Of the sample's {sum(faults.values())} failed conversations, read whole once "
            "their rewards were known: "
            + ", ".join(f"{faults[k]} {k}" for k in ("agent", "user", "both") if faults[k])
            + " at fault."
        )
    return text + "\n"


def _acting(
    folder: Path, names: Sequence[str], runs: Mapping[str, Sequence[RunRecord]] | None = None
) -> dict[str, bool]:
    """By conversation (``RUN/TASK/eEPOCH``) of the runs a sample was drawn from (``runs``
    where read, else beside it in ``folder``): whether its task's reward rests on what the
    agent does (``acts``)."""
    found: dict[str, bool] = {}
    for name in names:
        path = folder / f"{name}.jsonl"
        if runs is not None and name in runs:
            records: Sequence[RunRecord] = runs[name]
        elif path.exists():
            records = read_runs(path)
        else:
            continue
        found |= {f"{name}/{r.task_id}/e{r.epoch}": acts(r) for r in records}
    return found
