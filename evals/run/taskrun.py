"""One task run: the loop's settings for an eval, the tools a task runs with (what its
environment gives it), and the run itself: one question answered by the task's solver, or a
conversation with a simulated user (``evals.conversation``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from httpx import MockTransport

from evals.conversation import (
    GUIDELINES,
    IDLE_WORDS,
    AskedAgain,
    ModelUser,
    Rules,
    ScriptedUser,
    StopWhen,
    Talk,
    User,
    converse,
    scripted_agent,
)
from evals.environments import Dialogue, Opened
from evals.environments.base import filled
from evals.errors import EvalError
from evals.pipe import PipeFailed
from evals.record import ConversationRecord, UserRecord, UserTurn
from evals.registry import environment_of
from evals.run.resume import set_aside_attempt
from evals.run.settings import EvalSettings
from evals.solvers import TaskRun, solver_named
from evals.tasks import After, Task
from evals.tasks.checks import after_key
from harness.approvals import approve, reject
from harness.client import ChatClient, ProviderClient, RetryPolicy
from harness.errors import ToolServerFailed
from harness.loop import LoopConfig, run_loop
from harness.presets import apply
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.tools import ToolContext
from harness.trace import Recorder

EVAL_REJECTION = "This evaluation runs read-only; no file may be changed."


def loop_config(settings: EvalSettings, epoch: int = 1, task_id: str = "") -> LoopConfig:
    seed = settings.seed_of(task_id, epoch) if task_id else settings.epoch_seed(epoch)
    return apply(replace(settings.loop, seed=seed), settings.preset)


@dataclass
class Ran:
    """A task run: its state; for a conversation, the talk, who the user was, and what the
    environment's own judge gave it; ``machinery``: why the machinery (the user's side, the
    judge) failed it, if it did."""

    state: RunState
    talk: Talk | None = None
    user: UserRecord | None = None
    verdicts: dict[str, float] = field(default_factory=dict)
    machinery: str | None = None
    user_spent: dict[str, float] | None = None
    # The results of the task's ``after`` checks' calls, made once the run was over.
    after: dict[str, str] = field(default_factory=dict)

    def conversation(self) -> ConversationRecord | None:
        if self.talk is None:
            return None
        user = self.user or UserRecord()
        said = [
            UserTurn(text=t, calls_before=n, replying_to=r) for t, n, r in self.talk.user_messages()
        ]
        return ConversationRecord(
            end=self.talk.end,
            user_turns=self.talk.user_turns,
            user=user,
            said=said,
            user_spent=self.user_spent,
            steps=self.talk.steps,
            errors=self.talk.errors,
        )


async def _declined(
    state: RunState,
    client: ChatClient,
    setup: Setup,
    config: LoopConfig,
    recorder: Recorder,
    approvals: str,
) -> RunState:
    """A run stopped on a call awaiting approval, the call decided as the eval says (declined
    with a reason the model reads, or approved: a task set that changes its fresh workspace)
    and the run gone on until it stops otherwise."""
    while (
        approvals in ("reject", "approve")
        and state.interruption
        and state.interruption.get("type") == "approval"
    ):
        if approvals == "approve":
            approve(state, state.interruption["call_id"])
        else:
            reject(state, state.interruption["call_id"], EVAL_REJECTION)
        await run_loop(state, client, setup, config, recorder)
    return state


@asynccontextmanager
async def _user(
    task: Task,
    settings: EvalSettings,
    model: str,
    client: ChatClient,
    prompt: str,
    epoch: int,
    dialogue: Dialogue | None,
) -> AsyncIterator[tuple[User, UserRecord]]:
    """The conversation's user: the task's script, or a model prompted with ``prompt`` (with
    the user's own tools where the environment gives it some), asked through ``client`` (the
    user's own server where it has one, with its key)."""
    assert task.user is not None
    if task.user.script is not None:
        yield ScriptedUser(list(task.user.script)), UserRecord(scripted=True)
        return
    temperature = (
        settings.user_temperature if settings.user_temperature is not None
        else settings.loop.temperature
    )  # fmt: skip
    seed = settings.seed_of(task.id, epoch, "user")
    name = settings.user_model or model
    record = UserRecord(
        model=name, base_url=settings.user_base_url, temperature=temperature, seed=seed
    )
    tools = dialogue.user_tools if dialogue is not None else []
    call = dialogue.user_call if tools and dialogue is not None else None
    user = ModelUser(
        client, name, prompt, temperature, seed, tools=tools, call=call,
        # τ²'s user is asked for no length, and asked again on an empty reply.
        max_tokens=None if dialogue is not None else 512,
        empty_retries=int(dialogue.ways.get("empty_retries", 0)) if dialogue is not None else 0,
        unreadable_fails=bool(dialogue.ways.get("unreadable_fails")) if dialogue else False,
    )  # fmt: skip
    yield user, record


async def _agent_client(
    agent: str, dialogue: Dialogue | None, client: ChatClient, stop_tool: str = ""
) -> ChatClient:
    """The agent's side: the model (``client``), or a scripted agent: the oracle makes the
    task's gold calls and says what it must; the idle agent does nothing. An agent that ends
    its run by calling ``stop_tool`` (τ²'s solo agent) ends with that call, where words would
    fail it: the oracle after its gold calls, the idle agent at once."""
    if agent == "model":
        return client
    stop: list[tuple[str, dict[str, Any]]] = [(stop_tool, {})] if stop_tool else []
    if agent == "idle":
        handler = scripted_agent(stop, IDLE_WORDS)
    elif dialogue is None:
        raise EvalError(f"--agent {agent}: this environment knows no gold actions")
    else:
        calls, words = await dialogue.gold()
        handler = scripted_agent([*calls, *stop], " ".join(["Done.", *words]))
    retry = RetryPolicy(max_retries=0, base_delay_s=0.0, max_delay_s=0.0)
    return ProviderClient("http://agent.invalid/v1", retry=retry, transport=MockTransport(handler))


async def _conversation(
    ran: Ran,
    task: Task,
    settings: EvalSettings,
    clients: tuple[ChatClient, ChatClient],
    setup: Setup,
    dialogue: Dialogue | None,
    config: LoopConfig,
    recorder: Recorder,
    epoch: int,
) -> None:
    """``clients``: the agent model's and the user model's."""
    state = ran.state
    assert task.user is not None
    model_client, user_client = clients
    rules = Rules(
        max_user_turns=settings.max_user_turns, max_steps=settings.max_steps,
        max_errors=settings.max_errors, **(dialogue.ways if dialogue is not None else {}),
    )  # fmt: skip
    scripted = await _agent_client(settings.agent, dialogue, model_client, rules.stop_tool)
    client: ChatClient = scripted
    if rules.empty_retries:  # an empty reply asked again, as the environment's runner asks
        client = AskedAgain(scripted, rules.empty_retries)
    if dialogue is not None:
        dialogue.follow(state)
        if dialogue.system is not None:
            state.messages.insert(0, {"role": "system", "content": dialogue.system})
    prompt = (
        dialogue.user_prompt if dialogue is not None and dialogue.user_prompt is not None
        else GUIDELINES.format(scenario=task.user.scenario)
    )  # fmt: skip
    async with _user(task, settings, state.model, user_client, prompt, epoch, dialogue) as (
        user,
        who,
    ):
        ran.user = who

        async def agent(s: RunState, stop_when: StopWhen) -> RunState:
            await run_loop(s, client, setup, config, recorder, stop_when=stop_when)
            return await _declined(s, client, setup, config, recorder, settings.approvals)

        heard = dialogue.heard if dialogue is not None else None
        kwargs = {"heard": heard} if heard is not None else {}
        try:
            ran.talk = await converse(state, agent, user, recorder, rules=rules, **kwargs)
        finally:
            if scripted is not model_client and isinstance(scripted, ProviderClient):
                await scripted.aclose()  # a scripted agent's in-process client
        if isinstance(user, ModelUser):
            ran.user_spent = {k: round(v, 1) for k, v in user.spent.items()}
    if state.status == "running":  # the user ended the talk before the agent's loop ran
        state.status = "completed"
    if ran.talk.error is not None:
        ran.machinery = ran.talk.error
        return
    # A run the machinery ended (its provider, a tool's server or worker, the wall clock) is an
    # error whatever a judge would say: it is not judged.
    machinery_ended = (
        state.provider_unavailable or state.prompt_too_long or state.tool_server_failed
        or state.wall_limit_hit
    )  # fmt: skip
    if dialogue is not None and not machinery_ended:
        try:
            ran.verdicts = await dialogue.judge(state.run_id, ran.talk.end.tau2)
        except EvalError as exc:
            ran.machinery = str(exc)


async def _afterwards(task: Task, setup: Setup, run_id: str) -> dict[str, str]:
    """Each ``after`` check's call (``{workspace}`` in its arguments: the run's folder), made
    on what the run left, before its environment is torn down: its result by call. Only a
    read-only tool is called; any other, or one the run does not have, is answered with why,
    and the check fails on it."""
    tools = {t.name: t for t in setup.tools}
    found: dict[str, str] = {}
    for check in task.checks:
        if not isinstance(check, After):
            continue
        tool = tools.get(check.tool)
        if tool is None:
            result = f"refused: the run has no tool {check.tool}"
        elif not tool.read_only:
            result = f"refused: {check.tool} is not read-only"
        else:
            context = ToolContext(setup.workspace, idempotency_key=f"{run_id}-after")
            arguments = filled(check.arguments, str(setup.workspace.root))
            try:
                result = await tool.fn(arguments, context)
            except Exception as exc:  # the check fails on it, and says why
                result = f"refused: {exc.__class__.__name__}: {exc}"
        found[after_key(check.tool, check.arguments)] = result
    return found


async def run_task(
    task: Task,
    settings: EvalSettings,
    model: str,
    run_id: str,
    scratch: Path,
    keep: Path,
    client: ChatClient,
    opened: Opened,
    epoch: int = 1,
    user_client: ChatClient | None = None,
) -> Ran:
    """One task on a fresh workspace, with what its environment (``opened`` for this eval)
    gives it; its state file and trace are kept under ``keep``. ``user_client``: where a
    conversation's user model is asked when the eval names no server of its own for it (None:
    ``client``); apart from the agent's, so the agent's queue time is its own."""
    config = loop_config(settings, epoch, task.id)
    state = new_run(model, task.question, run_id=run_id)
    if task.user is not None:  # the user's words open the conversation, not the question
        state.messages = []
    state.meta["task_tools"] = task.tools
    ran = Ran(state)
    earlier = set_aside_attempt(keep, run_id)
    recorder = Recorder(state_dir=keep, trace_path=keep / f"{run_id}.trace.jsonl")
    if earlier is not None:
        recorder.event(state, "attempt", attempt=earlier + 1, earlier=f"{run_id}.attempt-{earlier}")
    environment = environment_of(task)
    try:
        async with opened.setup(task, scratch / run_id / "workspace") as setup:
            if task.user is not None:
                dialogue = opened.dialogue(setup) if hasattr(opened, "dialogue") else None
                await _conversation(
                    ran, task, settings, (client, user_client or client), setup, dialogue,
                    config, recorder, epoch,
                )  # fmt: skip
            else:
                run = TaskRun(task, environment, state, client, setup, config, recorder)
                await solver_named(settings.solver).solve(run)
                await _declined(state, client, setup, config, recorder, settings.approvals)
            ran.after = await _afterwards(task, setup, run_id)
    except ToolServerFailed as exc:  # the tools' servers failed to start (or to stop)
        state.status, state.error, state.tool_server_failed = "failed", str(exc), True
        recorder.event(state, "run_stopped", status="failed", error=state.error)
        recorder.checkpoint(state)
    except PipeFailed as exc:  # an environment's worker died or hung (its gold, its judge)
        ran.machinery = str(exc)
    if ran.machinery is not None:
        recorder.event(state, "machinery_failed", error=ran.machinery)
    if ran.talk is not None or ran.machinery is not None:
        # A talk the user ended before the agent's loop ran has no state file yet.
        recorder.checkpoint(state)
    return ran
