"""One Inspect eval log of ``inspect_evals``' BFCL as JSON lines, one item each: run by the
interpreter of the separate Inspect virtualenv (``.venv-inspect``), never imported by the main
process.

``inspect_evals`` pulls ``datasets``, pandas and the hub client, none of which the project
needs, so it lives in its own virtualenv; this file imports nothing of the project, only the
standard library and ``inspect_ai``, and is run by path with ``python -I``:

    .venv-inspect/bin/python -I evals/bfcl/inspect_items.py LOG.eval > items.jsonl

Each line: the item's id and category, Inspect's verdict (its scorer's value, answer and
explanation), the calls as Inspect parsed them from the server's reply (with any parse error),
the calls as the server sent them, the reply's text and stop reason, the request Inspect sent
(messages, tools, tool choice and the sampling fields it set) and the sample's error, if any.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log

# What of the request the comparison reads; the rest (the client's own fields) is left out.
REQUEST_FIELDS = ("messages", "tools", "tool_choice", "temperature", "max_tokens", "seed")


def _call(sample: Any) -> Any:
    """The first model call's raw exchange with the server (request and response)."""
    return next(
        (e.call for e in sample.events if isinstance(e, ModelEvent) and e.call is not None), None
    )


def _server_calls(response: Any) -> list[dict[str, Any]] | None:
    """The tool calls as the server sent them, before Inspect parsed them."""
    try:
        calls = response["choices"][0]["message"].get("tool_calls") or []
        return [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in calls
        ]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def item(sample: Any) -> dict[str, Any]:
    score = next(iter((sample.scores or {}).values()), None)
    message = sample.output.message if sample.output and sample.output.choices else None
    call = _call(sample)
    calls = [
        {"function": c.function, "arguments": c.arguments, "parse_error": c.parse_error}
        for c in ((message.tool_calls or []) if message is not None else [])
    ]
    return {
        "id": str(sample.id),
        "category": sample.metadata.get("category_name"),
        "value": None if score is None else score.value,
        "answer": None if score is None else score.answer,
        "explanation": None if score is None else score.explanation,
        "calls": calls,
        "content": message.text if message is not None else None,
        "stop_reason": sample.output.stop_reason
        if sample.output and sample.output.choices
        else None,
        "request": None
        if call is None
        else {k: call.request[k] for k in REQUEST_FIELDS if k in call.request},
        "server_calls": None if call is None else _server_calls(call.response),
        "error": sample.error.message if sample.error else None,
    }


def main(path: str) -> int:
    log = read_eval_log(path, resolve_attachments="full")
    header = {
        "inspect_ai": log.eval.packages.get("inspect_ai"),
        "inspect_evals": log.eval.packages.get("inspect_evals"),
        "task": log.eval.task,
        "task_version": log.eval.task_version,
        "model": log.eval.model,
        "status": log.status,
    }
    print(json.dumps({"header": header}))
    for sample in log.samples or []:
        print(json.dumps(item(sample), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
