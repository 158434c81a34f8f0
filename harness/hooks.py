"""The loop's side of the settings: each step asks every registered hook in turn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.client import TurnOptions
from harness.config import LoopConfig
from harness.policies.base import Prompt, TurnPlan
from harness.policies.error_hints import shows_hints
from harness.policies.registry import HOOKS
from harness.setup import Setup
from harness.state import Ask, Call, RunState
from harness.toolrun import ToolOutcome
from harness.tools import Tool

INTRO = (
    "You are a careful assistant working in a folder of files. Use the tools to look at the "
    "files before you answer."
)
FINISH = " When you know the answer, reply in one or two sentences."
BASE_PROMPT = INTRO + FINISH  # the plain loop's


def system_prompt(config: LoopConfig, setup: Setup | None = None) -> str:
    """The hooks' system prompt, opening with what the run works on (``setup.intro``; a
    folder of files unless the task source says otherwise); a hook reads the rest of the
    run's setup from the prompt (``Prompt.setup``)."""
    prompt = Prompt((setup and setup.intro) or INTRO, FINISH, setup=setup)
    for hook in HOOKS:
        hook.prompt(config, prompt)
    return prompt.text()


def offered_tools(tools: list[Tool], config: LoopConfig, declared: list[str] | None) -> list[Tool]:
    for hook in HOOKS:
        tools = hook.offer(config, tools, declared)
    return tools


def ask(state: RunState, config: LoopConfig, offered: set[str]) -> None:
    """The first request a hook makes before this turn joins the transcript, recorded in the
    run's ``asks`` (saved with the state, so a resumed run knows what was said)."""
    for hook in HOOKS:
        said = hook.ask(state, config, offered)
        if said is not None:
            state.messages.append({"role": "user", "content": said.text})
            state.asks.append(Ask(hook.name, len(state.messages) - 1, said.data))
            return


def answer(state: RunState, config: LoopConfig) -> str | None:
    for hook in HOOKS:
        if (found := hook.answer(state, config)) is not None:
            return found
    return None


def plan_turn(
    state: RunState, config: LoopConfig, specs: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], TurnOptions]:
    """The tools the next request offers and what else it asks."""
    plan = TurnPlan(list(specs))
    for hook in HOOKS:
        hook.plan(state, config, plan)
    options = TurnOptions(
        tool_choice=plan.tool_choice,
        temperature=config.temperature,
        seed=config.seed,
        **plan.options,
    )
    return plan.tools, options


def answer_call(
    state: RunState, config: LoopConfig, tools: Mapping[str, Tool], call: Call
) -> tuple[ToolOutcome, str] | None:
    """An answer to ``call`` without running its tool, if a hook gives one."""
    for hook in HOOKS:
        if (found := hook.answer_call(state, config, tools, call)) is not None:
            return found
    return None


def conclusion(config: LoopConfig, limit: str) -> str | None:
    for hook in HOOKS:
        if (text := hook.conclusion(config, limit)) is not None:
            return text
    return None


def hints(config: LoopConfig) -> bool:
    """Whether a failed call's hint is read with its error (``error_hints``)."""
    return shows_hints(config)
