"""Prompt chaining: the code gathers (lists and reads every file; or describes the database
and runs the one query the model writes), then one model call answers from what was read."""

from __future__ import annotations

from evals.solvers.base import Steps, Workflow
from evals.solvers.gather import answer, gather


async def _chain(steps: Steps) -> str:
    await gather(steps)
    return await answer(steps)


CHAIN = Workflow(
    "chain",
    "list and read every file (or describe the database and run one query the model writes), "
    "then one call answers",
    _chain,
)
