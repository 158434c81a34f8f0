"""What an answer commits to, read against the task's typed answer (``evals.tasks.Answer``).

An answer is credited when it commits to the expected candidate and to no competing one. The
reading is deterministic and works on the candidates, not on phrasings:

1. **Mentions.** Each candidate is found where the text names it: a file name as a whole
   token, a number as digits or a number word (a number followed by a unit such as ``bytes``
   or ``ms`` is a measurement, not a candidate, unless the answer gives no bare candidate
   number and frames the measurement as a value, in the words the value questions use
   (``value``, ``set to``, ``gives ... for``): "the value of batch_size is 5516 bytes" states
   5516 with a wrong unit, "notes.txt is 3 bytes" states no count). When every
   candidate is a file name, a file name that is no candidate (a file the workspace does not
   hold) is a mention too: a claim that names it claims something else than any candidate.
2. **Lists.** Mentions whose only separation is commas, colons, line breaks, ``and``/``or``,
   numbers, units or a parenthesis form a list (a semicolon or a sentence's end closes it). A
   list of two or more candidates commits to none of them, whether it enumerates ("a, b and
   c") or hedges ("a or b", "3, 4, 5 or 6").
3. **Denials.** A mention in a clause that negates (``not``, ``no``, ``n't``, ``never``,
   ``without`` ...) is denied, not affirmed. Clauses end at punctuation and at contrast words
   (``but``, ``while``, ``whereas``, ``however``, ``although``).
4. **Hedges.** An answer that offers alternatives anywhere (a list joined by ``or``, two
   candidates with ``or``, ``either``, ``maybe``, ``perhaps``, ``possibly`` or ``might``
   between them) commits to nothing.
5. **Claims.** What is left, mentions outside lists and not denied, are claims; the answer
   commits to its first claim. A later claim of another candidate competes with it, and the
   answer commits to nothing, unless it is ranked below the first: a comparative or an ordinal
   (``followed by``, ``then``, ``second``, ``smaller``, ``the smallest`` ...) stands between
   them or in its clause. A ranked answer ("X is the largest, followed by Y and Z", "X is the
   largest; Z is the smallest") therefore commits to X; "X and Y" and "X has 110 bytes, and Y
   has 96" commit to nothing.

Yes/no answers are read from the clauses that name the subject outside a list of file names
(each affirms or denies it; both at once, or an unsure word, is a hedge), else from a leading
"yes" or "no", else from a clause that denies a file, a name or "it". "Yes" and "no" offered
together commit to nothing. Fact answers commit to the set of sources whose facts they state
and do not deny: a fact in a negating clause, or after a negation in its sentence ("does not
mention lantern, queue depth or juniper" denies the whole list), is not stated.

Before any of this, two things are set aside. **Paths** are names, never words of the answer:
a path-shaped token (``/tmp/run/12-missing/workspace/summary.cfg``, ``reports/missing/``) is
read as its last part when that is a file name and as a neutral word otherwise, so the words
of a folder the run echoes ("present in /data/missing/reports") neither deny nor affirm (a
fact answer is read as written: the facts a file holds may be paths, "GET /health"). And a
**hypothetical** ("for example", "for instance", "e.g.", "suppose", "if the output is", "would
be") commits to nothing: a worked example of what an answer could look like is not one.

What the reading does not do: check that a claim answers the question asked. "errors.log is
the largest file" commits to errors.log, so it is credited for "which file mentions a
timeout?" when errors.log is the answer there too. The labelled corpus holds such rows and
``python -m lab grader-check`` lists them as disagreements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from evals.tasks import Facts, ListOf, NumberIs, OneOf, TypedAnswer, YesNo

__all__ = ["Commitment", "commitment", "credits"]

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]|[.,]\d)|\b("
    + "|".join(NUMBER_WORDS)
    + r")\b",
    re.IGNORECASE,
)
_UNIT = re.compile(r"\s*(?:bytes?|b|kb|mb|gb|ms|s|sec|seconds?|minutes?|%)\b", re.IGNORECASE)
_PARENTHESIS = re.compile(r"\([^()]*\)")
_MEASURE = re.compile(r"\d[\d,.]*\s*(?:bytes?|b|kb|mb|ms)?\b", re.IGNORECASE)
_JOINERS = {"and", "or", "also", "plus", "nor", "the", "files", "file"}
# A sentence's end or a semicolon ends a list: what follows is a statement of its own.
_STATEMENT_END = re.compile(r"[;!?]|\.(?=\s)")
_SEPARATOR_WORD = re.compile(r"[a-z]+")
_NEGATION = re.compile(
    r"\b(?:no|not|never|none|neither|nor|without|cannot|nothing)\b|n[’']t\b", re.IGNORECASE
)
# A sentence ends at a full stop, a question or exclamation mark, a semicolon or a line break,
# and its part before a contrast word ("but", "however") says nothing of the part after it.
_SENTENCE_END = re.compile(
    r"[.!?](?=\s|$)|[;\n]|\b(?:but|however|although|though|whereas|while)\b", re.IGNORECASE
)
_ABSENCE = re.compile(r"\b(?:absent|missing|nonexistent)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(
    r"[.!?:](?=\s|$)|[;,\n()]|\s[-–—]\s|\b(?:but|while|whereas|however|although|though)\b",
    re.IGNORECASE,
)
_UNSURE = re.compile(
    r"\b(?:or not|may or may not|maybe|perhaps|possibly|might|not sure|unsure|unclear)\b",
    re.IGNORECASE,
)
_ALTERNATIVE = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|might)\b", re.IGNORECASE)
# A later claim ranked below the first: a comparative or an ordinal between them or in its
# clause ("followed by", "then", "second", "smaller", "the smallest").
_RANKED = re.compile(
    r"\b(?:followed|then|next|second|third|fourth|fifth|last|than|smaller|larger|"
    r"bigger|less|more|fewer|smallest|largest|biggest|tiniest|least|most|lowest|highest)\b",
    re.IGNORECASE,
)
# Yes and no offered together ("Yes or no.", "yes/no"): a hedge.
_BOTH = re.compile(r"\byes\b\W*(?:or|and)?\W*\bno\b|\bno\b\W*(?:or|and)?\W*\byes\b", re.I)
_FILE_NAME = re.compile(r"[\w\-]+\.\w+")
_LEADING = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_REFERS = re.compile(r"\b(?:file|files|name|named|it|such)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Commitment:
    """What the answer commits to (None: nothing), and why, in words."""

    value: Any
    why: str


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    value: Any


# A file name that could be one: a letter first, an extension of two to five characters.
_OTHER_FILE = re.compile(r"(?<![\w.\-/])[A-Za-z][\w\-]*\.[A-Za-z][A-Za-z0-9]{1,4}(?![\w\-]|\.\w)")


def _one_of_mentions(text: str, candidates: list[str]) -> list[_Mention]:
    """The candidates a text names and, when every candidate is a file name, the other file
    names it names (as themselves: no candidate)."""
    found = _file_mentions(text, candidates)
    if not all(_OTHER_FILE.fullmatch(c) for c in candidates):
        return found
    known = {c.lower() for c in candidates}
    for m in _OTHER_FILE.finditer(text):
        overlaps = any(f.start < m.end() and m.start() < f.end for f in found)
        if m.group().lower() not in known and not overlaps:
            found.append(_Mention(m.start(), m.end(), m.group().lower()))
    return sorted(found, key=lambda m: m.start)


def _file_mentions(text: str, names: list[str]) -> list[_Mention]:
    """Every whole-token mention of a name; a longer name is matched before a shorter one it
    contains, and mentions never overlap."""
    found: list[_Mention] = []
    taken: list[tuple[int, int]] = []
    for name in sorted(names, key=len, reverse=True):
        pattern = re.compile(r"(?<![\w.\-/])" + re.escape(name) + r"(?![\w\-]|\.\w)", re.I)
        for m in pattern.finditer(text):
            if not any(a < m.end() and m.start() < b for a, b in taken):
                found.append(_Mention(m.start(), m.end(), name))
                taken.append((m.start(), m.end()))
    return sorted(found, key=lambda m: m.start)


def _number_mentions(text: str, candidates: list[float], tolerance: float = 0.0) -> list[_Mention]:
    """Numbers in the text that are candidates (within ``tolerance`` of one, read as the
    nearest); measurements (a unit follows) only when no bare number is a candidate."""
    bare = _numbers(text, candidates, tolerance, measured=False)
    if bare:
        return bare
    return [
        m
        for m in _numbers(text, candidates, tolerance, measured=True)
        if _AS_VALUE.search(_sentence(text, m.start))
    ]


# How a value question asks (evals.workspace.generate): an answer in these words gives a value.
_AS_VALUE = re.compile(r"\b(?:value|set to|gives?\b[^.;\n]*\bfor)\b", re.IGNORECASE)


def _sentence(text: str, at: int) -> str:
    start = 0
    for m in _SENTENCE_END.finditer(text, 0, at):
        start = m.end()
    end = _SENTENCE_END.search(text, at)
    return text[start : end.start() if end else len(text)]


def _numbers(
    text: str, candidates: list[float], tolerance: float, measured: bool
) -> list[_Mention]:
    found = []
    for m in _NUMBER.finditer(text):
        if bool(_UNIT.match(text, m.end())) != measured:
            continue
        if m.group(1):
            value = float(m.group(1).replace(",", ""))
        else:
            value = float(NUMBER_WORDS[m.group(2).lower()])
        nearest = min(candidates, key=lambda c: abs(c - value))
        if abs(nearest - value) <= tolerance + 1e-9:
            found.append(_Mention(m.start(), m.end(), nearest))
    return found


def _separates(gap: str) -> bool:
    """Whether ``gap`` only separates two items of a list: punctuation, joining words,
    numbers and units, parentheses."""
    rest = _MEASURE.sub(" ", _PARENTHESIS.sub(" ", gap)).lower()
    if _STATEMENT_END.search(rest):
        return False
    words = _SEPARATOR_WORD.findall(rest)
    return all(w in _JOINERS for w in words) and len(words) <= 3


def _lists(text: str, mentions: list[_Mention]) -> list[list[_Mention]]:
    """Mentions grouped into runs that only separators divide."""
    runs: list[list[_Mention]] = []
    for m in mentions:
        if runs and _separates(text[runs[-1][-1].end : m.start]):
            runs[-1].append(m)
        else:
            runs.append([m])
    return runs


def _clause(text: str, at: int) -> str:
    """The clause holding position ``at``."""
    start = 0
    for m in _CLAUSE_END.finditer(text, 0, at):
        start = m.end()
    end = _CLAUSE_END.search(text, at)
    return text[start : end.start() if end else len(text)]


def _denied(text: str, mention: _Mention, absence: bool = False) -> bool:
    clause = _clause(text, mention.start)
    return bool(_NEGATION.search(clause) or (absence and _ABSENCE.search(clause)))


def _hedged_list(text: str, run: list[_Mention]) -> bool:
    return len({m.value for m in run}) > 1 and any(
        re.search(r"\bor\b", text[a.end : b.start], re.I) for a, b in pairwise(run)
    )


def _first_claim(text: str, mentions: list[_Mention]) -> Commitment:
    runs = _lists(text, mentions)
    if any(_hedged_list(text, run) for run in runs):
        return Commitment(None, "a hedge: alternatives joined by 'or'")
    claims = [
        run[0] for run in runs if len({m.value for m in run}) == 1 and not _denied(text, run[0])
    ]
    if not claims:
        listed = any(len({m.value for m in run}) > 1 for run in runs)
        return Commitment(None, "only a list of candidates" if listed else "no candidate claimed")
    first = claims[0]
    for later in (c for c in claims[1:] if c.value != first.value):
        between = text[first.end : later.start]
        if _ALTERNATIVE.search(between):
            return Commitment(None, "a hedge: alternatives offered")
        if not (_RANKED.search(between) or _RANKED.search(_clause(text, later.start))):
            return Commitment(None, "claims competing candidates")
    return Commitment(first.value, "the first claim")


def _hedge_anywhere(text: str) -> bool:
    """Alternatives joined by 'or' over file names or numbers, whatever the task asks: an
    answer that hedges on anything is read as committing to nothing."""
    items = [
        _Mention(m.start(), m.end(), m.group().lower())
        for m in re.finditer(r"[\w\-]+\.\w+|\d+|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", text)
    ]
    return any(_hedged_list(text, run) for run in _lists(text, items))


def _yes_no(answer: YesNo, text: str) -> Commitment:
    if _hedge_anywhere(text) or _BOTH.search(text):
        return Commitment(None, "a hedge: alternatives joined by 'or'")
    names = [m.group() for m in _FILE_NAME.finditer(text)]
    listed = {
        (m.start, m.end)
        for run in _lists(text, _file_mentions(text, list(dict.fromkeys(names))))
        if len({m.value for m in run}) > 1
        for m in run
    }
    named = [m for m in _file_mentions(text, [answer.subject]) if (m.start, m.end) not in listed]
    if named:
        if any(_UNSURE.search(_clause(text, m.start)) for m in named):
            return Commitment(None, "a hedge: unsure whether the subject is there")
        said = {not _denied(text, m, absence=True) for m in named}
        if len(said) > 1:
            return Commitment(None, "affirms and denies the subject")
        (value,) = said
        return Commitment(value, "the clauses that name the subject")
    leading = _LEADING.match(text)
    if leading:
        return Commitment(leading.group(1).lower() == "yes", "a leading yes or no")
    for clause in re.split(r"[.!?](?=\s|$)|[;\n]", text):
        if _REFERS.search(clause) and (_NEGATION.search(clause) or _ABSENCE.search(clause)):
            return Commitment(False, "a clause that denies the file")
    return Commitment(None, "neither names the subject nor says yes or no")


def _negated_before(text: str, at: int) -> bool:
    """Whether a negation opens the part of the sentence before ``at``: "does not mention
    lantern, queue depth or juniper" denies every item of its list, not only the first, though
    commas end its clauses."""
    start = 0
    for m in _SENTENCE_END.finditer(text, 0, at):
        start = m.end()
    return bool(_NEGATION.search(text, start, at))


def _fact_stated(text: str, fact: str) -> bool:
    """A fact is stated where it is mentioned and not denied: neither its clause negates nor a
    negation before it in its sentence covers it."""
    for m in re.finditer(re.escape(fact), text, re.IGNORECASE):
        mention = _Mention(m.start(), m.end(), fact)
        if not _denied(text, mention) and not _negated_before(text, m.start()):
            return True
    return False


def _facts(answer: Facts, text: str) -> Commitment:
    stated = frozenset(
        source
        for source, facts in answer.facts.items()
        if any(_fact_stated(text, f) for f in facts)
    )
    return Commitment(stated, "the sources whose facts it states and does not deny")


def _list_of(answer: ListOf, text: str) -> Commitment:
    if _hedge_anywhere(text) or any(
        _hedged_list(text, run) for run in _lists(text, _file_mentions(text, answer.candidates))
    ):
        return Commitment(None, "a hedge: alternatives joined by 'or'")
    named = _file_mentions(text, answer.candidates)
    affirmed = frozenset(m.value for m in named if not _denied(text, m))
    return Commitment(affirmed, "the candidates it names and does not deny")


# A path: two or more parts joined by '/', or one part after a leading '/' or '~/'.
_PATH = re.compile(r"(?:~?/)?(?:[\w.\-]+/)+[\w.\-]*|(?<![\w.<])/[\w.\-]+")
_HYPOTHETICAL = re.compile(
    r"\b(?:for example|for instance|e\.g\.|suppose|supposing|if the (?:output|result) (?:is|were)"
    r"|would be)\b",
    re.IGNORECASE,
)


def _without_paths(text: str) -> str:
    """``text`` with each path read as a name: its last part when that is a file name (the
    file it names), else the neutral word ``folder``."""

    def name(m: re.Match[str]) -> str:
        if not re.search(r"[A-Za-z]", m.group()):
            return m.group()  # a ratio or a date (3/4, 2026/03/02), not a path
        last = m.group().rstrip("/").rsplit("/", 1)[-1]
        return last if _FILE_NAME.fullmatch(last) else "folder"

    return _PATH.sub(name, text)


def commitment(answer: TypedAnswer, text: str) -> Commitment:
    """What ``text`` commits to, read as ``answer``'s type."""
    if _HYPOTHETICAL.search(text):
        return Commitment(None, "a hypothetical: a worked example is not an answer")
    if not isinstance(answer, Facts):  # a fact may hold a path ("GET /health"): read as said
        text = _without_paths(text)
    match answer:
        case OneOf(candidates=candidates):
            if _hedge_anywhere(text):
                return Commitment(None, "a hedge: alternatives joined by 'or'")
            return _first_claim(text, _one_of_mentions(text, candidates))
        case NumberIs(candidates=candidates, tolerance=tolerance):
            if _hedge_anywhere(text):
                return Commitment(None, "a hedge: alternatives joined by 'or'")
            return _first_claim(text, _number_mentions(text, candidates, tolerance))
        case YesNo():
            return _yes_no(answer, text)
        case Facts():
            return _facts(answer, text)
        case ListOf():
            return _list_of(answer, text)
    raise AssertionError(f"unhandled answer type {answer!r}")


def credits(answer: TypedAnswer, text: str) -> bool:
    """Whether ``text`` commits to the expected candidate and to no competing one."""
    value = commitment(answer, text).value
    match answer:
        case NumberIs(expected=expected, tolerance=tolerance):
            return value is not None and bool(abs(value - expected) <= tolerance)
        case Facts(expected=expected) | ListOf(expected=expected):
            return bool(value == frozenset(expected))
    return value is not None and bool(value == answer.expected)
