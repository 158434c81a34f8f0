"""A subagent as a tool: ``research`` runs a child loop with its own transcript and limits."""

from __future__ import annotations

from typing import Any

from harness.config import LoopConfig
from harness.loop import run_loop
from harness.providers import provider
from harness.setup import Setup
from harness.state import new_run
from harness.tools import Tool, ToolContext, default_tools

RESEARCH_SYSTEM = (
    "You are a research assistant. Investigate the question with the tools and reply with a "
    "short summary of what you found."
)


def research_tool(base_url: str, child_model: str, child_config: LoopConfig, *, api: str) -> Tool:
    """The child inherits the parent's cancellation, workspace and wire shape (``api``, as
    ``harness.providers`` names it), never its budget."""

    async def research(args: dict[str, Any], ctx: ToolContext) -> str:
        question = str(args.get("question") or "")
        child = new_run(child_model, question, system=RESEARCH_SYSTEM)
        async with provider(api, base_url) as client:
            await run_loop(
                child,
                client,
                Setup(default_tools(), ctx.workspace),
                child_config,
                cancel=ctx.cancel,
            )
        ctx.child_costs.append(child.cost_usd)
        if child.status == "completed":
            return child.answer or ""
        return (
            f"The research stopped without an answer: {child.status} after {child.turns} turns "
            f"(${child.cost_usd:.6f})."
        )

    return Tool(
        "research",
        "Investigate one question with the file tools and return a short summary.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
            "additionalProperties": False,
        },
        research,
        read_only=True,
    )
