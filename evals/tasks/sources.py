"""A generated task source: what ``loopbench generate --source NAME`` writes. Each environment
declares its own (``sources``: the workspace's files, the database's sql, MCP's git), and the
registry lists them (``evals.registry.sources``): a new source is one module and one entry in
its environment's ``sources``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evals.tasks.model import TaskSet

# One set of seeds for every generated source: dev to tune on, test to report on.
SPLITS = {"dev": range(0, 100), "test": range(1000, 1100)}


@dataclass(frozen=True)
class Source:
    name: str
    help: str
    splits: dict[str, range]
    # (seed, n, out, split) -> the task set written to ``out``
    write: Callable[[int, int, Path, str | None], TaskSet]

    def default_seed(self, split: str | None) -> int:
        return self.splits[split or "dev"].start
