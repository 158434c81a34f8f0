"""False claims: what a right answer states besides its answer that its task's environment
contradicts. The record keeps them (``false_claims``) and the reports count answers "right,
with a false claim"; the verdict never moves on them.

Which statements are read, and against what, is the environment's own rule
(``false_claims(task, answer)``, declared on it; the workspace's reads the files the task set
holds: ``evals.workspace.claims``). An environment without one, a plugin's included, is
never judged by another's state: its tasks get None, nothing checked.
"""

from __future__ import annotations

from evals.registry import environment_of
from evals.tasks import Task


def false_claims(task: Task, answer: str | None) -> list[str] | None:
    """Each false statement the answer makes about what the task's environment holds, by that
    environment's claim rule; None where it has none (nothing was checked)."""
    rule = getattr(environment_of(task), "false_claims", None)
    return None if rule is None else list(rule(task, answer))
