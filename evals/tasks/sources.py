"""Every generated task source, by name: what ``python -m evals generate --source NAME``
writes. A new source is one module (its seeds' splits and a writer) and one line here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evals.tasks import TaskSet, generate, git, load_tasks, sql


@dataclass(frozen=True)
class Source:
    name: str
    help: str
    splits: dict[str, range]
    # (seed, n, out, split) -> the task set written to ``out``
    write: Callable[[int, int, Path, str | None], TaskSet]

    def default_seed(self, split: str | None) -> int:
        return self.splits[split or "dev"].start


def _files(seed: int, n: int, out: Path, split: str | None) -> TaskSet:
    return load_tasks(generate.write(seed, n, out, split))


def _git(seed: int, n: int, out: Path, split: str | None) -> TaskSet:
    return git.write(seed, n, out, split)


def _sql(seed: int, n: int, out: Path, split: str | None) -> TaskSet:
    return sql.write(seed, n, out, split)[1]


SPLITS = generate.SPLITS

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("files", "questions over a workspace of three to six files", SPLITS, _files),
        Source(
            "sql",
            "an analyst's questions about a generated bank, asked through run_sql and describe",
            SPLITS,
            _sql,
        ),
        Source(
            "git",
            "questions about a generated git history, through mcp-server-git (an MCP server)",
            git.SPLITS,
            _git,
        ),
    )
}
