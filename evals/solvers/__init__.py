"""How a task is solved: the agent loop, or a workflow whose flow the code fixes in advance
(the loop-control chapter's "workflow or agent?"). Each solver is one module with one object
(``base.Solver``) in ``registry.py``; ``python -m evals run --solver NAME`` picks one, and
every record names it.

A workflow's steps run through the same parts as the loop: the environment's real tools
(called by the code, each a ``ToolRun`` with its result in the transcript, so the checks read a
workflow's evidence as they read an agent's), the same client and turn records (tokens, cost,
latency), the same limits and timeout. Its prompts hold no task text."""

from evals.solvers.base import Solver, Steps, TaskRun
from evals.solvers.registry import SOLVERS, solver_named

__all__ = ["SOLVERS", "Solver", "Steps", "TaskRun", "solver_named"]
