"""BFCL items as the main process holds them: what is sent, how a sample is drawn, and what
a reply becomes for BFCL's checker."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from harness.errors import ToolError
from harness.tools import Tool, ToolContext, check_arguments, parse_arguments

# The five non-live AST categories of BFCL's single-turn table; the others are optional.
DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
OPTIONAL_CATEGORIES = (
    "simple_java",
    "simple_javascript",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
# Conversations over BFCL's stateful backends, run through the agent loop (evals.bfcl.multi).
MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
CATEGORIES = DEFAULT_CATEGORIES + OPTIONAL_CATEGORIES + MULTI_TURN
# Where the right answer is about whether to call at all (no call, or any call): BFCL reports
# these apart from the call categories and never pools them with the others.
RELEVANCE = ("irrelevance", "live_irrelevance", "live_relevance")


@dataclass(frozen=True)
class Item:
    """One BFCL question: the first turn's messages and the functions as OpenAI tools."""

    id: str
    category: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    names: dict[str, str]  # tool name -> BFCL's function name (dots became underscores)
    functions: list[dict[str, Any]]  # BFCL's own function documents
    ground_truth: list[dict[str, Any]] | None  # None where the right answer is no call

    @classmethod
    def from_checker(cls, raw: dict[str, Any]) -> Item:
        return cls(
            id=raw["id"],
            category=raw["category"],
            messages=raw["messages"],
            tools=raw["tools"],
            names=raw["names"],
            functions=raw["functions"],
            ground_truth=raw["ground_truth"],
        )


class _Categorized(Protocol):
    @property
    def category(self) -> str: ...


Drawn = TypeVar("Drawn", bound=_Categorized)


def sample(items: list[Drawn], limit: int | None, seed: int) -> list[Drawn]:
    """``limit`` items of each category (all when None), in BFCL's order. Each category draws
    with its own ``random.Random``, seeded by the seed and the category's name, so adding a
    category leaves the others' samples as they were."""
    if limit is None:
        return list(items)
    chosen: list[Drawn] = []
    for category in dict.fromkeys(i.category for i in items):
        pool = [i for i in items if i.category == category]
        picked = set(
            random.Random(f"{seed}:{category}").sample(range(len(pool)), min(limit, len(pool)))
        )
        chosen += [item for n, item in enumerate(pool) if n in picked]
    return chosen


def bfcl_result(item: Item, message: dict[str, Any]) -> list[dict[str, str]] | str | None:
    """A reply as BFCL's OpenAI handler records it: one ``{function name: arguments JSON}``
    per call, each name mapped back to BFCL's, or the reply's text when it made no call."""
    calls = message.get("tool_calls") or []
    if not calls:
        content: str | None = message.get("content")
        return content
    return [{function_name(item, c["function"]["name"]): c["function"]["arguments"]} for c in calls]


def function_name(item: Item, tool_name: str) -> str:
    """BFCL's name for an offered tool; a name that was not offered stays as the model sent it."""
    return item.names.get(tool_name, tool_name)


async def _never_run(_: dict[str, Any], __: ToolContext) -> str:
    raise ToolError("BFCL's functions are judged by their calls, never run")


def as_tool(spec: dict[str, Any]) -> Tool:
    function = spec["function"]
    return Tool(
        name=function["name"],
        description=function.get("description", ""),
        parameters=function["parameters"],
        fn=_never_run,
        read_only=True,
    )


def schema_problem(item: Item, call: dict[str, Any]) -> str | None:
    """Why the harness would refuse this call before running it (unknown tool, arguments
    that are not a JSON object or that the tool's schema rejects); None when it would run."""
    tools = {t["function"]["name"]: t for t in item.tools}
    name = call["function"]["name"]
    if name not in tools:
        return f"no tool named {name!r} was offered"
    try:
        check_arguments(as_tool(tools[name]), parse_arguments(call["function"]["arguments"]))
    except ToolError as exc:
        return str(exc)
    return None
