"""BFCL's single-turn categories: each item one request through the project's client, and
its record (the calls, what the harness would say of each, BFCL's verdict)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evals.bfcl.items import Item, function_name, schema_problem
from evals.record import RunSpec
from evals.record.bfcl import BfclRun, ItemRecord
from evals.run.servers import PooledClient
from harness.client import ModelReply, TurnOptions
from harness.errors import ProviderError


async def ask(
    client: PooledClient, model: str, item: Item, options: TurnOptions
) -> tuple[ModelReply | None, str | None]:
    try:
        return await client.chat(model, item.messages, item.tools, options=options), None
    except ProviderError as exc:
        return None, str(exc)


def _question(item: Item) -> str:
    return next((str(m["content"]) for m in reversed(item.messages) if m["role"] == "user"), "")


def item_record(
    spec: RunSpec,
    run: BfclRun,
    item: Item,
    reply: ModelReply | None,
    request_error: str | None,
    verdict: dict[str, Any],
    result: Any,
    answered_by: list[str],
) -> dict[str, Any]:
    message = reply.message if reply else {}
    calls = message.get("tool_calls") or []
    fields = {
        "spec": spec,
        "bfcl": run,
        "id": item.id,
        "category": item.category,
        "question": _question(item),
        "calls": [
            {
                "name": c["function"]["name"],
                "function": function_name(item, c["function"]["name"]),
                "arguments": c["function"]["arguments"],
            }
            for c in calls
        ],
        "content": message.get("content"),
        "finish_reason": reply.finish_reason if reply else None,
        # What the harness would say of each call before running it: None, or why it refuses.
        "schema_problems": [schema_problem(item, c) for c in calls],
        "request_error": request_error,
        "checker_input": result,
        # A failed request is never a right answer, whatever the checker made of the error text.
        "valid": verdict["valid"] and request_error is None,
        "error_type": verdict["error_type"],
        "errors": verdict["errors"],
        "latency_ms": round(reply.latency_ms, 1) if reply else None,
        "prompt_tokens": reply.prompt_tokens if reply else 0,
        "completion_tokens": reply.completion_tokens if reply else 0,
        "timings": reply.timings if reply else None,
        "retries": reply.retries if reply else None,
        "answered_by": answered_by,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return ItemRecord.model_validate(fields).line()
