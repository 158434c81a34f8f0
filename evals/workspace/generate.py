"""The files task source: ``python -m evals generate --seed S --n N --out FILE``.

Each task carries its own workspace (three to six files) and a question of one of nine kinds,
in one of several phrasings. File names, sizes and contents come from ``random.Random(seed)``
and small word lists, built so every answer is unique: sizes differ, each needle word, key and
value appears in exactly one file, and no file name appears inside another name or any content.
The same seed always writes the same task set.

Seeds are split so that a preset tuned on some tasks is reported on others: ``dev`` seeds
0-99 are for trying things, ``test`` seeds 1000-1099 for the figures one reports. Nothing
enforces it; the task set's name records seed and split (``gen-test-s1000-n60``).

Every task is grounded: a typed answer (one file of the workspace, a number among the plausible
ones, yes or no about a named file, the facts of one file or of every file) with the candidates
it is chosen from, and an ``observed`` check that the run received it (the listing for counts,
sizes and names; the file's content for the rest). What a question names that the answer
depends on (a word to find, a file name to look for, a key) is in double quotes; a file the
question names is named exactly as listed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.tasks import TaskSet
from evals.tasks.sources import SPLITS

TOOLS = ["list_files", "read_file"]
KINDS = (
    "count",
    "largest",
    "smallest",
    "mentions",
    "says",
    "read_all",
    "exists",
    "missing",
    "value",
)

STEMS = (
    "agenda", "budget", "catalog", "digest", "draft", "inventory", "journal", "ledger",
    "manifest", "memo", "outline", "readme", "roster", "schedule", "summary", "ticket",
    "backlog", "minutes", "invoice", "survey",
)  # fmt: skip
EXTENSIONS = (".txt", ".log", ".md", ".cfg", ".csv")
MARKERS = (
    "falcon", "walrus", "mango", "otter", "lantern", "copper", "glacier", "saffron", "badger",
    "cobalt", "juniper", "nectar", "pebble", "thistle", "vortex", "marble", "fjord", "heron",
    "kestrel", "lichen", "nutmeg", "osprey", "prism", "quill", "raven", "sable", "tundra",
    "wombat", "yarrow", "zircon", "basalt", "cactus", "dynamo", "gazelle", "orchid", "walnut",
)  # fmt: skip
FILLER = (
    "the", "queue", "was", "checked", "at", "noon", "status", "stable", "after", "review",
    "entries", "updated", "daily", "batch", "moved", "to", "archive", "pending", "items",
    "cleared", "by", "team", "shift", "ended", "logged", "values", "below", "and", "kept",
)  # fmt: skip
KEYS = (
    "max_workers", "retry_limit", "batch_size", "cache_mb", "queue_depth", "poll_seconds",
    "shard_count", "buffer_kb", "max_clients", "window_ms", "lease_minutes", "flush_every",
)  # fmt: skip
NUMBER_WORDS = {3: "three", 4: "four", 5: "five", 6: "six"}

PHRASINGS: dict[str, tuple[str, ...]] = {
    "count": (
        "How many files are there?",
        "How many files does the workspace hold?",
        "Count the files in the workspace.",
        "What is the number of files in the workspace?",
    ),
    "largest": (
        "Which file is the largest?",
        "Which file has the most bytes?",
        "Name the biggest file in the workspace.",
    ),
    "smallest": (
        "Which file is the smallest?",
        "Which file has the fewest bytes?",
        "Name the tiniest file in the workspace.",
    ),
    "mentions": (
        'Which file mentions "{needle}"?',
        'In which file does the word "{needle}" appear?',
        'Find the file that contains "{needle}".',
    ),
    "says": (
        "What does {name} say?",
        "Show me what {name} contains.",
        "Read {name} and tell me what it says.",
    ),
    "read_all": (
        "List the files and read each one.",
        "Read every file and report what each one says.",
        "Go through all the files and summarise each of them.",
    ),
    "exists": (
        'Is there a file named "{needle}"?',
        'Does the workspace contain a file called "{needle}"?',
        'Check whether a file named "{needle}" exists.',
    ),
    "value": (
        'What is the value of "{key}" in {name}?',
        'In {name}, what is "{key}" set to?',
        'Which number does {name} give for "{key}"?',
    ),
}
PHRASINGS["missing"] = PHRASINGS["exists"]


@dataclass
class File:
    name: str
    markers: list[str]
    settings: dict[str, int]  # key -> value
    content: str = ""

    @property
    def facts(self) -> list[str]:
        """What a report of this file states: its words, keys and values."""
        return [*self.markers, *self.settings, *map(str, self.settings.values())]


def split_of(seed: int) -> str | None:
    return next((name for name, seeds in SPLITS.items() if seed in seeds), None)


def default_seed(split: str) -> int:
    return SPLITS[split][0]


def set_name(seed: int, n: int, split: str | None = None) -> str:
    split = split or split_of(seed)
    return f"gen-{split}-s{seed}-n{n}" if split else f"gen-s{seed}-n{n}"


def _sentence(rng: random.Random, marker: str) -> str:
    words = rng.sample(FILLER, rng.randint(3, 6))
    words.insert(rng.randint(1, len(words)), marker)
    return " ".join(words).capitalize() + "."


def _workspace(rng: random.Random) -> list[File]:
    count = rng.randint(3, 6)
    stems = rng.sample(STEMS, count)
    markers = rng.sample(MARKERS, 2 * count)
    keys = rng.sample(KEYS, 2 * count)
    values = rng.sample(range(1000, 10000), 2 * count)
    files = []
    for i, stem in enumerate(stems):
        settings = {keys[2 * i]: values[2 * i]}
        if rng.random() < 0.5:
            settings[keys[2 * i + 1]] = values[2 * i + 1]
        mine = markers[2 * i : 2 * i + 2]
        lines = [_sentence(rng, mine[0]), *(f"{k} = {v}" for k, v in settings.items())]
        lines.append(_sentence(rng, mine[1]))
        file = File(stem + rng.choice(EXTENSIONS), mine, settings, "\n".join(lines) + "\n")
        files.append(file)
    _distinct_sizes(rng, files)
    return files


def _distinct_sizes(rng: random.Random, files: list[File]) -> None:
    """Pad files whose size another already has, so the largest and smallest are unique."""
    seen: set[int] = set()
    for file in files:
        while len(file.content.encode()) in seen:
            file.content += rng.choice(FILLER).capitalize() + ".\n"
        seen.add(len(file.content.encode()))


def _check_unique(files: list[File]) -> None:
    """Each needle in one file only, and no name inside another name or any content."""
    contents = [f.content.lower() for f in files]
    for file in files:
        for fact in file.facts:
            holders = sum(fact.lower() in c for c in contents)
            if holders != 1:
                raise AssertionError(f"{fact!r} is in {holders} files")
        others = [g.name for g in files if g is not file]
        if any(file.name in text for text in [*others, *contents]):
            raise AssertionError(f"{file.name!r} appears inside another name or content")


def _size(file: File) -> int:
    return len(file.content.encode())


def _absent_name(rng: random.Random, files: list[File]) -> str:
    """A name not in the workspace: half the time a listed stem with another extension."""
    names = {f.name for f in files}
    if rng.random() < 0.5:
        stem = rng.choice(files).name.rsplit(".", 1)[0]
        options = [stem + e for e in EXTENSIONS if stem + e not in names]
    else:
        used = {f.name.rsplit(".", 1)[0] for f in files}
        options = [s + e for s in STEMS if s not in used for e in EXTENSIONS]
    return rng.choice(sorted(options))


def _listing(files: list[File]) -> dict[str, Any]:
    return {"kind": "observed", "tool": "list_files", "result_contains": [f.name for f in files]}


def _read(file: File, holding: str) -> dict[str, Any]:
    return {
        "kind": "observed",
        "tool": "read_file",
        "arguments": {"path": file.name},
        "result_contains": [holding],
    }


def _presence(name: str, exists: bool, files: list[File]) -> dict[str, Any]:
    """Evidence that ``name`` is there or not: a listing that shows it (a complete one, for a
    file that is not there), or a read of it by name, its contents or its "no such file"."""
    return {
        "kind": "presence",
        "name": name,
        "exists": exists,
        "listing": [f.name for f in files],
        "lists": ["list_files"],
        "reads": ["read_file"],
    }


def _one_of(target: File, files: list[File]) -> dict[str, Any]:
    return {
        "kind": "answer",
        "type": "one_of",
        "expected": target.name,
        "candidates": [f.name for f in files],
    }


def _number(expected: int, candidates: list[int]) -> dict[str, Any]:
    return {"kind": "answer", "type": "number", "expected": expected, "candidates": candidates}


def _facts(expected: list[File], files: list[File]) -> dict[str, Any]:
    return {
        "kind": "answer",
        "type": "facts",
        "expected": [f.name for f in expected],
        "facts": {f.name: f.facts for f in files},
    }


def _yes_no(expected: bool, subject: str) -> dict[str, Any]:
    return {"kind": "answer", "type": "yes_no", "expected": expected, "subject": subject}


def _question(rng: random.Random, kind: str, **fields: str) -> str:
    return rng.choice(PHRASINGS[kind]).format(**fields)


def _task(rng: random.Random, kind: str, files: list[File]) -> dict[str, Any]:
    """The question and checks of one task of ``kind`` over ``files``."""
    done: dict[str, Any] = {"kind": "status", "value": "completed"}
    names = [f.name for f in files]
    target = rng.choice(files)
    if kind == "count":
        n = len(files)
        question = _question(rng, kind)
        checks = [_number(n, sorted(NUMBER_WORDS)), _listing(files)]
    elif kind in ("largest", "smallest"):
        pick = max if kind == "largest" else min
        target = pick(files, key=_size)
        question = _question(rng, kind)
        listing = _listing(files)
        listing["result_contains"].append("bytes")
        checks = [_one_of(target, files), listing]
    elif kind == "mentions":
        needle = rng.choice(target.markers)
        question = _question(rng, kind, needle=needle)
        checks = [_one_of(target, files), _read(target, needle)]
    elif kind == "says":
        question = _question(rng, kind, name=target.name)
        checks = [_facts([target], files), _read(target, target.markers[0])]
    elif kind == "read_all":
        question = _question(rng, kind)
        checks = [_facts(files, files), _listing(files), {"kind": "files_read", "files": names}]
    elif kind == "exists":
        question = _question(rng, kind, needle=target.name)
        checks = [_yes_no(True, target.name), _presence(target.name, True, files)]
    elif kind == "missing":
        absent = _absent_name(rng, files)
        question = _question(rng, kind, needle=absent)
        checks = [_yes_no(False, absent), _presence(absent, False, files)]
    elif kind == "value":
        key = rng.choice(sorted(target.settings))
        value = target.settings[key]
        question = _question(rng, kind, key=key, name=target.name)
        values = sorted(v for f in files for v in f.settings.values())
        checks = [_number(value, values), _read(target, f"{key} = {value}")]
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return {"question": question, "checks": [done, *checks]}


def generate(seed: int, n: int, split: str | None = None) -> dict[str, Any]:
    """A task set of ``n`` tasks from ``seed``: every kind once before any kind twice."""
    if n < 1:
        raise ValueError("--n must be at least 1")
    rng = random.Random(seed)
    kinds: list[str] = []
    while len(kinds) < n:
        round_ = list(KINDS)
        rng.shuffle(round_)
        kinds += round_
    tasks = []
    for index, kind in enumerate(kinds[:n]):
        files = _workspace(rng)
        _check_unique(files)
        task = _task(rng, kind, files)
        tasks.append(
            {
                "id": f"{index:02d}-{kind}",
                "kind": kind,
                "question": task["question"],
                "tools": TOOLS,
                "workspace": {f.name: f.content for f in files},
                "checks": task["checks"],
            }
        )
    name = set_name(seed, n, split)
    data = {
        "name": name,
        "description": (
            f"Generated by `python -m evals generate --seed {seed} --n {n}"
            + (f" --split {split}`" if split else "`")
            + f" (split {split or split_of(seed) or 'none'}): {n} tasks of the kinds "
            + ", ".join(KINDS)
            + ", each over its own workspace. Every task is grounded."
        ),
        "tasks": tasks,
    }
    TaskSet.model_validate(data)  # what load_tasks will read
    return data


def write(seed: int, n: int, out: Path, split: str | None = None) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(generate(seed, n, split), indent=1) + "\n", encoding="utf-8")
    return out
