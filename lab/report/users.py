"""The simulated user's errors, flagged by rule on every user turn of a conversation run.

A conversation's score is only as good as the user that held it. Each rule reads one user
message (``evals.record.UserTurn``) against the task's scenario and the talk before it, and
names a way the user failed its part; a flagged turn is evidence against the user, not the
agent. The rules are cheap and blind to the reward; a labelled sample read turn by turn
(``lab.report.samples``, ``results/tau2/labels/``) measures how far they can be trusted.

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
