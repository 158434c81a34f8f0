"""Parallelization by voting: the chain's answer call sampled ``k`` times at a stated
temperature, from one prefix; the answer is the sample the majority commits to, read as the
task's typed answer reads (which file, which number, yes or no, which names), by its
candidates and never its expected value. Where the answer is not of such a type, samples vote
by their words."""

from __future__ import annotations

from collections import Counter
from typing import Any

from evals.scoring.answers import commitment
from evals.scoring.evidence import stated
from evals.solvers.base import Steps, Workflow, said
from evals.solvers.gather import ANSWER, gather
from evals.tasks import Facts, Task

SAMPLES = 5
TEMPERATURE = 0.7


def position(task: Task, text: str) -> Any:
    """What one sample commits to, as a vote (None: no vote)."""
    answer = task.answer
    if answer is None or isinstance(answer, Facts):  # facts are read against the expected ones
        words = " ".join(stated(text).lower().split())
        return words or None
    return commitment(answer, stated(text)).value


def majority(task: Task, texts: list[str]) -> int:
    """The index of the first sample whose position the most samples share."""
    positions = [position(task, t) for t in texts]
    counts = Counter(p for p in positions if p is not None)
    if not counts:
        return 0
    most = max(counts.values())
    return next(i for i, p in enumerate(positions) if p is not None and counts[p] == most)


async def _vote(steps: Steps) -> str:
    await gather(steps)
    steps.state.messages.append({"role": "user", "content": ANSWER})
    prefix = list(steps.state.messages)
    base = steps.config.seed or 0
    texts = [
        said(await steps.ask(None, temperature=TEMPERATURE, seed=base + k, prefix=prefix))
        for k in range(SAMPLES)
    ]
    chosen = majority(steps.task, texts)
    steps.state.meta["votes"] = [position(steps.task, t) is not None for t in texts]
    steps.state.meta["vote_chosen"] = chosen
    return texts[chosen]


VOTE = Workflow(
    "vote",
    f"the chain's answer sampled {SAMPLES} times at temperature {TEMPERATURE}; the majority's",
    _vote,
    {"samples": SAMPLES, "temperature": TEMPERATURE},
)
