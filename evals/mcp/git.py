"""The git task source: questions about a generated repository's history, asked through the
reference git server (``mcp-server-git``, from PyPI), which this project did not write.

A history comes from ``random.Random(seed)``: three authors of six, three files of settings
(``key = value`` lines), five to seven commits, each creating a file or changing one setting,
with a message of two words no other message shares, which never names the file or the value.
Commits carry fixed dates and authors, so the same seed builds the same commit hashes on any
machine (:func:`build_repository` lays it out in a task's folder, checked against the
fingerprint the task set was written with).

Five kinds of question, each a typed answer with its candidates and a ``received`` check that
the run read the result holding it: who made a commit, which file a commit changed, what a
setting held right after a commit, how many commits there are (a complete log: every
message), who changed a file last (that commit shown, with the file it changed). Each
task names the calls that fetch that result (``reading``), which the question-blind strategies
make before they answer. Seeds split as the other sources': dev 0-99, test 1000-1099.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.tasks import Task, TaskSet, write_taskset
from evals.workspace.fields import RepositoryRef
from harness.mcp.config import ServerConfig

SPLITS = {"dev": range(0, 100), "test": range(1000, 1100)}
AUTHORS = (
    "Ana Pham", "Bao Tran", "Chi Le", "Dung Vo", "Hoa Ngo", "Minh Do",
)  # fmt: skip
STEMS = ("limits", "deploy", "service", "schedule", "storage", "network")
EXTENSIONS = (".cfg", ".ini", ".conf")
KEYS = (
    "max_workers", "retry_limit", "batch_size", "cache_mb", "queue_depth", "poll_seconds",
    "shard_count", "buffer_kb", "max_clients", "window_ms", "lease_minutes", "flush_every",
)  # fmt: skip
VERBS = ("Tune", "Adjust", "Revise", "Rework", "Refresh", "Settle", "Trim", "Raise", "Shape")
WORDS = (
    "falcon", "walrus", "mango", "otter", "lantern", "copper", "glacier", "saffron", "badger",
    "cobalt", "juniper", "nectar", "pebble", "thistle", "vortex", "marble", "fjord", "heron",
)  # fmt: skip
KINDS = ("author", "changed_file", "value_at", "count", "last_author")
SERVER = ServerConfig(command="mcp-server-git", args=["--repository", "{workspace}"])
INTRO = (
    "You answer questions about the git repository at {workspace}. Use the git tools, with "
    "repo_path {workspace}, to look before you answer."
)
START = 1767607200  # 2026-01-05 10:00 UTC; commit i is i days later


@dataclass(frozen=True)
class Commit:
    author: str
    message: str
    file: str
    key: str
    value: int
    creates: bool
    # Every setting of the file after this commit, in order.
    content: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class History:
    seed: int
    files: tuple[str, ...]
    commits: tuple[Commit, ...]

    @property
    def fingerprint(self) -> str:
        data = json.dumps([self.files, [c.__dict__ for c in self.commits]], sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:16]


def history(seed: int) -> History:
    rng = random.Random(f"git-{seed}")
    authors = rng.sample(AUTHORS, 3)
    files = tuple(s + rng.choice(EXTENSIONS) for s in rng.sample(STEMS, 3))
    keys = rng.sample(KEYS, 6)
    settings: dict[str, list[tuple[str, int]]] = {}
    words = rng.sample(WORDS, 7)
    values = rng.sample(range(100, 10000), 40)
    commits: list[Commit] = []
    for i in range(rng.randint(5, 7)):
        author, message = rng.choice(authors), f"{rng.choice(VERBS)} {words[i]} settings"
        if i < len(files):
            file = files[i]
            settings[file] = [(keys[2 * i], values.pop()), (keys[2 * i + 1], values.pop())]
            key, value = settings[file][0]
            creates = True
        else:
            file = rng.choice(files)
            row = rng.randrange(2)
            key, value = settings[file][row][0], values.pop()
            settings[file][row] = (key, value)
            creates = False
        content = tuple(settings[file])
        commits.append(Commit(author, message, file, key, value, creates, content))
    return History(seed, files, tuple(commits))


def _text(content: tuple[tuple[str, int], ...]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in content)


def _git(folder: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise EvalError(f"git {' '.join(args)} failed in {folder}: {done.stderr.strip()}")
    return done.stdout.strip()


def build(hist: History, folder: Path) -> list[str]:
    """``hist`` laid out as a repository in ``folder``; its commit hashes, oldest first."""
    folder.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    base |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    _git(folder, base, "init", "-q", "-b", "main")
    hashes = []
    for i, commit in enumerate(hist.commits):
        (folder / commit.file).write_text(_text(commit.content), encoding="utf-8")
        email = commit.author.lower().replace(" ", ".") + "@example.com"
        date = f"@{START + i * 86400} +0000"
        env = base | {
            "GIT_AUTHOR_NAME": commit.author, "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_NAME": commit.author,
            "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date,
        }  # fmt: skip
        _git(folder, env, "add", commit.file)
        _git(folder, env, "commit", "-q", "--no-gpg-sign", "-m", commit.message)
        hashes.append(_git(folder, env, "rev-parse", "HEAD"))
    return hashes


def build_repository(ref: RepositoryRef, folder: Path) -> list[str]:
    """The repository a task names, laid out in ``folder`` (checked against its fingerprint)."""
    hist = history(ref.seed)
    if hist.fingerprint != ref.fingerprint:
        raise EvalError(
            f"the task set was generated from another version of history {ref.seed} "
            f"(fingerprint {ref.fingerprint}; this code makes {hist.fingerprint}): generate it "
            "again"
        )
    return build(hist, folder)


def _log(limit: int = 50) -> tuple[str, dict[str, Any]]:
    return ("git_log", {"repo_path": "{workspace}", "max_count": limit})


def _show(revision: str) -> tuple[str, dict[str, Any]]:
    return ("git_show", {"repo_path": "{workspace}", "revision": revision})


def _who(question: str, commit: Commit, authors: list[str]) -> dict[str, Any]:
    """Who made ``commit``: one of ``authors`` (and its own), read off the log."""
    candidates = sorted(set(authors) | {commit.author})
    return {
        "question": question,
        "answer": {"type": "one_of", "expected": commit.author, "candidates": candidates},
        "received": [commit.message, commit.author],
        "reading": [_log()],
    }


def _question(kind: str, hist: History, hashes: list[str], rng: random.Random) -> dict[str, Any]:
    commits = hist.commits
    authors = sorted({c.author for c in commits} | set(rng.sample(AUTHORS, 3)))[:4]
    if kind == "author":
        c = commits[rng.randrange(len(commits))]
        return _who(f'Who made the commit "{c.message}"?', c, authors)
    if kind == "changed_file":
        i = rng.randrange(len(commits))
        c = commits[i]
        return {
            "question": f'Which file did the commit "{c.message}" change?',
            "answer": {"type": "one_of", "expected": c.file, "candidates": list(hist.files)},
            "received": [c.file, f"{c.key} = {c.value}"],
            "reading": [_log(), _show(hashes[i])],
        }
    if kind == "value_at":
        i = rng.randrange(len(commits))
        c = commits[i]
        key, value = rng.choice(c.content)
        seen = {v for d in commits for k, v in d.content if k == key}
        others = [v for d in commits for _, v in d.content if v not in seen]
        candidates = sorted(seen | set(rng.sample(others, min(len(others), 3))))
        return {
            "question": f'What was "{key}" in {c.file} right after the commit "{c.message}"?',
            "answer": {"type": "number", "expected": value, "candidates": candidates},
            "received": [f"{key} = {value}"],
            "reading": [_log(), _show(f"{hashes[i]}:{c.file}")],
        }
    if kind == "count":
        n = len(commits)
        return {
            "question": "How many commits does the repository's history hold?",
            "answer": {"type": "number", "expected": n, "candidates": list(range(n - 2, n + 3))},
            # A complete log: every commit's message in one result.
            "received": [c.message for c in commits],
            "reading": [_log()],
        }
    file = rng.choice(hist.files)
    last = max(i for i, c in enumerate(commits) if c.file == file)
    who = _who(f"Who changed {file} last?", commits[last], authors)
    # The file's last change shown: that commit, its author and the file it changed, in one
    # result (its git_show); a log names no file, so it shows whose commit came last, not
    # whose change of this file.
    who["received"].append(file)
    who["reading"].append(_show(hashes[last]))
    return who


def generate(seed: int, n: int, split: str | None = None, scratch: Path | None = None) -> TaskSet:
    """``n`` questions, one history each (history seed ``seed + k``), the kinds in turn."""
    name = f"git-{split}-s{seed}-n{n}" if split else f"git-s{seed}-n{n}"
    tasks = []
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        for k in range(n):
            kind = KINDS[k % len(KINDS)]
            hist = history(seed + k)
            hashes = build(hist, Path(tmp) / str(k))
            q = _question(kind, hist, hashes, random.Random(f"q-{seed}-{k}"))
            task = {
                "id": f"{k:02d}-{kind}",
                "kind": kind,
                "question": q["question"],
                "workspace": {},
                "repository": {"seed": seed + k, "fingerprint": hist.fingerprint},
                "reading": q["reading"],
                "checks": [
                    {"kind": "status", "value": "completed"},
                    {"kind": "answer", **q["answer"]},
                    {"kind": "received", "result_contains": q["received"]},
                ],
            }
            tasks.append(Task.model_validate(task))
    description = (
        "Questions about generated git histories through mcp-server-git "
        f"({n} histories, seeds {seed} to {seed + n - 1})"
    )
    return TaskSet.model_validate(
        {
            "name": name,
            "description": description,
            "mcpServers": {"git": SERVER},
            "intro": INTRO,
            "tasks": tasks,
        }
    )


def write(seed: int, n: int, out: Path, split: str | None = None) -> TaskSet:
    taskset = generate(seed, n, split)
    write_taskset(taskset, out)
    return taskset
