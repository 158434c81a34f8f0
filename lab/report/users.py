"""The simulated user's errors, flagged by rule on every user turn of a conversation run.

A conversation's score is only as good as the user that held it. Each rule reads one user
message (``evals.record.UserTurn``) against the task's scenario and the talk before it, and
names a way the user failed its part; a flagged turn is evidence against the user, not the
agent. The rules are cheap and blind to the reward; a labelled sample read turn by turn
(``results/tau2/labels/user-turns.jsonl``) measures how far they can be trusted.

- ``plays_agent``: the user speaks as the agent would (offers help, asks how it can assist):
  the roles are swapped, and the agent is left without a request.
- ``early_stop``: the user ends the conversation (a stop word) before the agent has made any
  tool call, on a task whose reward rests on what the agent does.
- ``leaks``: the user writes out its instructions' scaffolding (the scenario's headings, the
  guidelines' words, the rules' markup) instead of talking.
- ``unknown_fact``: the user states an identifier (a user id, a reservation or order code, an
  e-mail) that neither its scenario nor anything said before it holds: an invented fact.
- ``empty_stop``: the user's first message is already a stop word: no request was made.
- ``echoes``: the user repeats the agent's words it replies to (all of them, or a long run of
  them) instead of answering: a parrot, not a customer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evals.conversation import OUT_OF_SCOPE, STOP, TRANSFER
from evals.record import RunRecord, UserTurn

RULES = (
    "plays_agent", "early_stop", "leaks", "unknown_fact", "empty_stop", "echoes", "off_scenario",
)  # fmt: skip
NOT_JUDGED = ("error", "not_run")

_AGENT_WORDS = re.compile(
    r"\bhow (?:can|may) i (?:help|assist)\b|\bhow can i be of (?:help|assistance)\b"
    r"|\bwhat can i (?:do|help) (?:for|with)\b|\bis there anything (?:else )?i can help\b"
    # An assistant's refusal and its request to be told more: the customer asks for help,
    # never turns it down, and has no question of the agent's to have clarified.
    r"|\bi(?:'m| am) (?:sorry|afraid),? (?:but )?i (?:can(?:'t|not)|am unable to) "
    r"(?:help|assist)\b|\bnot sure what you(?:'re| are) asking\b"
    r"|\bclarify (?:your|the) (?:question|request)\b",
    re.IGNORECASE,
)
# Words of no substance, left out when a user's first message is held against its scenario.
_PLAIN = frozenset(
    [
        "about",
        "after",
        "again",
        "also",
        "been",
        "before",
        "being",
        "could",
        "does",
        "doing",
        "from",
        "have",
        "hello",
        "help",
        "here",
        "just",
        "know",
        "like",
        "more",
        "need",
        "please",
        "some",
        "than",
        "thank",
        "thanks",
        "that",
        "the",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "today",
        "very",
        "want",
        "what",
        "when",
        "where",
        "which",
        "will",
        "with",
        "would",
        "your",
        "you",
    ]
)
_SCAFFOLD = re.compile(
    r"<\/?(?:scenario|instructions|policy)>|\b(?:reason for call|known info|unknown info|"
    r"task instructions)\s*:|\byou are playing the role\b|\buser simulat",
    re.IGNORECASE,
)
# Identifier-shaped tokens: snake_case ids with a digit, e-mails, codes of capitals and
# digits (reservation, order and flight numbers); plain numbers and words are not facts
# this rule can check.
_IDENTIFIER = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.]+|\b[a-z]+(?:_[a-z]+)*_\d+\b|#?\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])"
    r"[A-Z0-9]{5,}\b"
)
_STOPS = (STOP, TRANSFER, OUT_OF_SCOPE)


@dataclass(frozen=True)
class Flag:
    """A user turn a rule flags: which turn (from 1), the rule, and the words that did."""

    turn: int
    rule: str
    evidence: str


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def _echoes(text: str, heard: str | None) -> bool:
    """The user's message is the agent's words again: the same words, or eight or more of
    them in a row taken from what the agent said."""
    mine, theirs = _words(text), _words(heard or "")
    if not mine or not theirs:
        return False
    if mine == theirs:
        return True
    said = mine.split()
    return len(said) >= 8 and any(" ".join(said[i : i + 8]) in theirs for i in range(len(said) - 7))


def _substance(text: str) -> set[str]:
    """The words of four letters or more that say something (not greetings, not fillers)."""
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _PLAIN}


def _identifiers(text: str) -> set[str]:
    return {m.group(0).lstrip("#").lower() for m in _IDENTIFIER.finditer(text)}


def flags(scenario: str, said: Sequence[UserTurn], acts: bool = True) -> list[Flag]:
    """Every rule's flags on one conversation's user turns, each read against the scenario
    and what the agent had told the user before it (``UserTurn.replying_to``); ``acts``:
    whether the task's reward rests on what the agent does."""
    known = _identifiers(scenario)
    found: list[Flag] = []
    for n, turn in enumerate(said, start=1):
        known |= _identifiers(turn.replying_to or "")
        text = turn.text
        stops = any(word in text for word in _STOPS)
        if match := _AGENT_WORDS.search(text):
            found.append(Flag(n, "plays_agent", match.group(0)))
        if stops and n == 1:
            found.append(Flag(n, "empty_stop", text[:80]))
        elif stops and acts and turn.calls_before == 0:
            found.append(Flag(n, "early_stop", text[:80]))
        if not stops and _echoes(text, turn.replying_to):
            found.append(Flag(n, "echoes", text[:80]))
        if n == 1 and not stops and not _substance(text) & _substance(scenario):
            # Greeted by the agent, the user says why it called: a first message that shares
            # no word of substance with its scenario has not started on its task.
            found.append(Flag(n, "off_scenario", text[:80]))
        if match := _SCAFFOLD.search(text):
            found.append(Flag(n, "leaks", match.group(0)))
        invented = sorted(_identifiers(text) - known)
        if invented:
            found.append(Flag(n, "unknown_fact", ", ".join(invented)))
        known |= _identifiers(text)
    return found


# What τ²'s evaluator writes of a task that expects no action of the agent (its ``info``'s
# ``action`` part): a task whose right outcome is the database as it started.
_NO_ACTION = ("No actions to evaluate", "No evaluation criteria")


def acts(record: RunRecord) -> bool:
    """Whether the task's reward rests on what the agent does: False only where τ²'s
    evaluator judged the run and found no action to expect of it; True otherwise (a task of
    ours, a run τ² did not judge)."""
    info = getattr(record.environment, "reward_info", None) or {}
    parts = info.get("info") if isinstance(info, dict) else None
    action = parts.get("action") if isinstance(parts, dict) else None
    return not (isinstance(action, dict) and action.get("note") in _NO_ACTION)


@dataclass(frozen=True)
class UserErrors:
    """Flagged user turns over a run's conversations: turns, flagged turns, by rule, and the
    conversations with at least one flag."""

    turns: int
    flagged: int
    by_rule: dict[str, int]
    conversations: int
    flagged_conversations: int
    # The conversations no rule flagged a user turn of: how many, and how many scored.
    clean: int = 0
    clean_correct: int = 0


def user_errors(records: Sequence[RunRecord], scenarios: dict[str, str]) -> UserErrors:
    """The rules over every conversation of ``records`` (errors left out), each read against
    its task's scenario (``scenarios``: task id to scenario)."""
    turns = flagged = talks = flagged_talks = clean = clean_correct = 0
    by_rule: Counter[str] = Counter()
    for record in records:
        talk = record.conversation
        if talk is None or record.status in ("error", "not_run"):
            continue
        found = flags(scenarios.get(record.task_id, ""), talk.said, acts=acts(record))
        # A user whose reply was still empty when asked again ended the talk: its fault,
        # though it said nothing a rule could read.
        erred = bool(found) or talk.end == "user_error"
        talks += 1
        turns += len(talk.said)
        flagged_turns = {f.turn for f in found}
        flagged += len(flagged_turns)
        flagged_talks += erred
        if not erred:
            clean += 1
            clean_correct += bool(record.correct)
        by_rule.update(f.rule for f in found)
    return UserErrors(turns, flagged, dict(by_rule), talks, flagged_talks, clean, clean_correct)


# The labelled sample: whole conversations drawn at random (a stated seed) from committed
# conversation runs, written turn by turn without rewards or rule flags, then labelled by
# reading each user turn against its scenario and the agent's words before it.
LABELS = ("ok", "error")


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
        scenario = next((r["scenario"] for r in talk if r.get("scenario")), "")
        for i, row in enumerate(talk):
            if row.get("label") not in LABELS:
                continue
            if "earlier" in row:
                earlier = [UserTurn.model_validate(t) for t in row.get("earlier") or []]  # type: ignore[attr-defined]
            else:
                earlier = [_turn(r) for r in talk[:i]]
            found = flags(
                str(row.get("scenario") or scenario),
                [*earlier, _turn(row)],
                acts=(acting or {}).get(name, True),
            )
            flagged = any(f.turn == len(earlier) + 1 for f in found)
            labelled_n += 1
            if row["label"] == "error":
                errors += 1
                flagged_errors += flagged
            else:
                flagged_ok += flagged
    return Agreement(labelled_n, errors, flagged_errors, flagged_ok)
