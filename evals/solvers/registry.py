"""Every solver, one line each: the agent loop and the workflows."""

from __future__ import annotations

from evals.errors import EvalError
from evals.solvers.agent import AGENT
from evals.solvers.base import Solver
from evals.solvers.chain import CHAIN
from evals.solvers.evaluate_optimize import EVALUATE_OPTIMIZE
from evals.solvers.route import ROUTE
from evals.solvers.vote import VOTE

SOLVERS: dict[str, Solver] = {s.name: s for s in (AGENT, CHAIN, ROUTE, VOTE, EVALUATE_OPTIMIZE)}


def solver_named(name: str) -> Solver:
    if name not in SOLVERS:
        raise EvalError(f"no solver {name!r}; the solvers are: {', '.join(SOLVERS)}")
    return SOLVERS[name]
