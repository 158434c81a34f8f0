"""Routing: one model call picks what to read (files, or the tables whose first rows it sees),
constrained to the listed names by the call grammar; the code reads them; one call answers."""

from __future__ import annotations

from evals.solvers.base import Steps, Workflow
from evals.solvers.gather import answer, gather


async def _route(steps: Steps) -> str:
    await gather(steps, route=True)
    return await answer(steps)


ROUTE = Workflow(
    "route",
    "one call picks the files (or tables) to read, the code reads them, one call answers",
    _route,
)
