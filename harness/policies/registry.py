"""Every loop policy, in the order the loop consults them; one line adds one.

The order is the order of the settings in a record and of the hooks within a step: the
offered tools are filtered before submit is added and before a tool is wrapped; dedupe answers
a repeated call before the repeat guard would; of two requests before a turn, the first made
stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.policies import (
    act_after_error,
    conclude_on_limit,
    dedupe,
    error_hints,
    example,
    grounding,
    listing,
    name_files_on_miss,
    nudges,
    overview_in_prompt,
    parallel_tool_calls,
    query_before_answer,
    read_before_answer,
    read_listed,
    repeat_guard,
    required_turns,
    sampling,
    sql_limits,
    submit,
    tool_choice,
    tools,
)
from harness.policies.base import LoopPolicy, Setting, UnknownPolicy

POLICIES: tuple[LoopPolicy, ...] = (
    tools.POLICY,
    tool_choice.POLICY,
    parallel_tool_calls.POLICY,
    submit.POLICY,
    nudges.POLICY,
    dedupe.POLICY,
    repeat_guard.POLICY,
    sampling.POLICY,
    example.POLICY,
    conclude_on_limit.POLICY,
    listing.POLICY,
    required_turns.POLICY,
    act_after_error.POLICY,
    name_files_on_miss.POLICY,
    grounding.POLICY,
    read_before_answer.POLICY,
    query_before_answer.POLICY,
    read_listed.POLICY,
    error_hints.POLICY,
    sql_limits.POLICY,
    overview_in_prompt.POLICY,
)

SETTINGS: dict[str, Setting[Any]] = {s.name: s for p in POLICIES for s in p.settings}
assert len(SETTINGS) == sum(len(p.settings) for p in POLICIES), "two policies share a setting"
assert len({p.name for p in POLICIES}) == len(POLICIES), "two policies share a name"


def defaults() -> dict[str, Any]:
    """Every setting at its default: the plain loop."""
    return {name: s.default for name, s in SETTINGS.items()}


def settings_of(given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` checked against the registry and completed with the defaults; an
    unknown name or a value a setting cannot hold is an :class:`UnknownPolicy` that says so."""
    unknown = sorted(set(given) - set(SETTINGS))
    if unknown:
        raise UnknownPolicy(
            f"no policy setting {', '.join(map(repr, unknown))}; the settings are: "
            + ", ".join(SETTINGS)
        )
    checked = {name: SETTINGS[name].check(value) for name, value in given.items()}
    return {**defaults(), **checked}
