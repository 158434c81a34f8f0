"""What an answer states about a workspace of files besides its answer, checked against the
files: the workspace environment's claim rule (``evals.scoring.claims``).

An answer can be right about the question and false about something else it states: "Yes,
readme.log exists; it is the biggest file" when it is not the biggest. The verdict never moves
on such a statement (the question was answered); the record lists it (``false_claims``) and
the reports count the answers that are "right, with a false claim", so invented detail is
visible without changing accuracy.

What is checked, conservatively (a statement the reading cannot pin down is not flagged):

- a size: a file named in a clause with ``N bytes`` (one file in the clause), against its size;
- a rank: a file named alone in a clause with ``largest``/``biggest`` or ``smallest``/
  ``tiniest``/``fewest``, not negated, against the workspace's largest or smallest file;
- a count: ``N files`` (digits or a number word), not negated, against how many files there are;
- a file: a file name the workspace does not hold, named in a clause that does not deny it.

The workspace environment reads the files its task set holds (the six tasks' seed files, the
generated sets); a task on any other environment is judged by that environment's own rule, or
not at all.
"""

from __future__ import annotations

import re

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_FILE = re.compile(r"(?<![\w.\-/])[A-Za-z][\w\-]*\.[A-Za-z][A-Za-z0-9]{1,4}(?![\w\-]|\.\w)")
_SIZE = re.compile(r"(?<![\w.,])(\d[\d,]*)\s*bytes?\b", re.IGNORECASE)
_COUNT = re.compile(
    r"(?<![\w.,])(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(?:\w+\s+)?files?\b", re.IGNORECASE
)
_LARGEST = re.compile(r"\b(?:largest|biggest|most bytes)\b", re.IGNORECASE)
_SMALLEST = re.compile(r"\b(?:smallest|tiniest|fewest bytes|least bytes)\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:no|not|never|none|neither|nor|without|cannot|nothing|absent|missing)\b|n[’']t\b",
    re.IGNORECASE,
)
# Clauses end at punctuation, line breaks and contrast words; a ranked list ("followed by")
# starts a clause of its own.
_CLAUSE_END = re.compile(
    r"[.!?:](?=\s|$)|[;,\n()]|\s[-–—]\s|\b(?:but|while|whereas|however|although|though|"
    r"followed by|compared to|than)\b",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[str]:
    parts, start = [], 0
    for m in _CLAUSE_END.finditer(text):
        parts.append(text[start : m.start()])
        start = m.end()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


def about_files(files: dict[str, str], answer: str | None) -> list[str]:
    """Each false statement the answer makes about a workspace holding ``files`` (name:
    content), in words."""
    sizes = {name.lower(): len(content.encode("utf-8")) for name, content in files.items()}
    largest = max(sizes.values(), default=0)
    smallest = min(sizes.values(), default=0)
    found: list[str] = []
    for clause in _clauses(answer or ""):
        named = list(dict.fromkeys(m.group().lower() for m in _FILE.finditer(clause)))
        denied = bool(_NEGATION.search(clause))
        for name in named:
            if name not in sizes and not denied:
                found.append(f"names {name}, which the workspace does not hold")
        if len(named) == 1 and named[0] in sizes:
            name, size = named[0], sizes[named[0]]
            said = [int(m.group(1).replace(",", "")) for m in _SIZE.finditer(clause)]
            if len(said) == 1 and said[0] != size:
                found.append(f"gives {name} {said[0]} bytes; it has {size}")
            if not denied and _LARGEST.search(clause) and size != largest:
                found.append(f"calls {name} the largest; it is not")
            if not denied and _SMALLEST.search(clause) and size != smallest:
                found.append(f"calls {name} the smallest; it is not")
        for m in _COUNT.finditer(clause):
            if not denied and _count(m.group(1)) != len(sizes):
                found.append(f"says {m.group(1)} files; the workspace holds {len(sizes)}")
    return list(dict.fromkeys(found))
