"""The environments of τ²'s conversations in flight, by key, with their trajectories, held as
tau2's orchestrator holds them; a part of the worker (``worker.py``, which imports it from
beside it), run under the tau2 virtualenv's interpreter: it imports nothing of the project,
and tau2 only inside the calls that need it."""

from __future__ import annotations

from typing import Any

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
