"""Evaluator–optimizer: the chain's answer, then a call that checks it against what was read
(a verdict the call grammar holds to: accept, or revise with what is wrong) and, when it says
revise, a call that answers again; at most two rounds. On a database, a query that fails is
repaired once before the answer."""

from __future__ import annotations

from evals.solvers.base import Steps, Workflow, arguments_of, noted, said
from evals.solvers.gather import answer, gather

ROUNDS = 2
EVALUATE = (
    "Check the answer just given against the results above. Call verdict with accept if "
    "they support it, or with revise and what is wrong."
)
REVISE = "The answer was judged wrong: {problem} Answer the question again from the results above."
TEXTS = (EVALUATE, REVISE)
VERDICT = noted(
    "verdict",
    "Accept the answer, or say what is wrong with it.",
    {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["accept", "revise"]},
            "problem": {"type": "string", "maxLength": 300},
        },
        "required": ["decision"],
        "additionalProperties": False,
    },
    "Noted.",
)


async def _improve(steps: Steps, first: str) -> str:
    current = first
    for _ in range(ROUNDS):
        reply = await steps.ask(EVALUATE, offer=[VERDICT])
        if reply.get("tool_calls"):
            await steps.answer_calls()
        verdict = arguments_of(reply)
        if verdict.get("decision") != "revise":
            break  # accepted, or no verdict given: the answer stands
        problem = " ".join(str(verdict.get("problem") or "").split()) or "(no reason given)."
        current = said(await steps.ask(REVISE.format(problem=problem)))
    return current


async def _evaluate_optimize(steps: Steps) -> str:
    await gather(steps, repair=True)
    return await _improve(steps, await answer(steps))


EVALUATE_OPTIMIZE = Workflow(
    "evaluate-optimize",
    f"the chain's answer checked by a second call and revised, at most {ROUNDS} rounds (a "
    "failed query repaired once)",
    _evaluate_optimize,
    {"rounds": ROUNDS},
)
