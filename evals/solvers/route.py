"""Routing: one model call picks what to read (files, or the tables whose first rows it sees),
constrained to the listed names by the call grammar; the code reads them; one call answers."""

from __future__ import annotations

from evals.solvers.base import Steps, Workflow
from evals.solvers.gather import answer, query_database, read_workspace


async def _files(steps: Steps) -> str:
    await read_workspace(steps, route=True)
    return await answer(steps)


async def _database(steps: Steps) -> str:
    await query_database(steps, route=True)
    return await answer(steps)


ROUTE = Workflow(
    "route",
    "one call picks the files (or tables) to read, the code reads them, one call answers",
    {"workspace": _files, "database": _database},
)
