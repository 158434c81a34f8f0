"""The steps the workflows share: gathering what a task's environment holds, and the answer.
The workflows never branch on the environment: each environment that workflows can run on says
how its evidence is gathered (its ``gather``: a workspace lists and reads every file, or the
ones the model picks; a database describes itself, then the model writes one query, the code
runs it, with one repair round if asked)."""

from __future__ import annotations

from evals import registry
from evals.errors import EvalError
from evals.solvers.base import Steps, said

ANSWER = "Answer the question from the results above. Be brief."


def texts() -> tuple[str, ...]:
    """Every text the gathering steps and the answer can put before the model."""
    return (ANSWER, *(t for e in registry.ENVIRONMENTS for t in getattr(e, "texts", ())))


async def gather(steps: Steps, route: bool = False, repair: bool = False) -> None:
    """What the task's environment holds, gathered by the code (``route``: the model picks
    what to read; ``repair``: a failed query gets one more try)."""
    environment = steps.run.environment
    rule = getattr(environment, "gather", None)
    if rule is None:
        able = ", ".join(e.name for e in registry.ENVIRONMENTS if hasattr(e, "gather"))
        raise EvalError(
            f"no workflow can gather evidence on a task's {environment.name!r} environment "
            f"(task {steps.task.id}); they can on: {able}"
        )
    await rule(steps, route=route, repair=repair)


async def answer(steps: Steps) -> str:
    return said(await steps.ask(ANSWER))
