"""The provider client for the Anthropic Messages shape (``POST /v1/messages``).

The run state keeps one transcript whatever the wire: this module writes it as a Messages
request (the system prompt apart, tool calls as ``tool_use`` blocks, results as ``tool_result``
blocks with ``is_error``, consecutive messages of one role as one turn) and reads the reply back
into that transcript, with the raw ``stop_reason`` as the reply's finish reason. What the loop
does on each reason is ``harness.replies.ACTIONS``; retries and cancellation are the shared
client's.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from harness.client import (
    ModelReply,
    ProviderClient,
    RetryPolicy,
    TurnOptions,
    clean_text,
    refused_calls,
)
from harness.errors import ProviderError
from harness.keys import KeyFrom

# The same ceiling the local server applies to a chat request that names none; the Messages
# shape requires one.
DEFAULT_MAX_TOKENS = 512
# What an empty reply says when a turn follows it: the Messages shape refuses an assistant turn
# with no content anywhere but last, and dropping the turn would join the user turns around it
# and hide from the model that it said nothing.
NO_CONTENT = "(no content)"


def api_root(base_url: str) -> str:
    """The server root, whether ``base_url`` is the root or its ``/v1``."""
    return base_url.rstrip("/").removesuffix("/v1")


class MessagesClient(ProviderClient):
    api = "anthropic"

    def __init__(
        self,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        key: KeyFrom | None = None,
    ) -> None:
        super().__init__(base_url, timeout_s, retry, transport, key)
        self.max_tokens = max_tokens
        self._http.base_url = httpx.URL(api_root(self.base_url))

    def request(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: TurnOptions | None = None,
    ) -> tuple[str, dict[str, Any]]:
        system = [str(m.get("content") or "") for m in messages if m["role"] == "system"]
        options = options or TurnOptions()
        payload: dict[str, Any] = {
            "model": model,
            "max_tokens": options.max_tokens or self.max_tokens,
            "messages": messages_param(messages),
            "temperature": 0,
        }
        if system:
            payload["system"] = "\n\n".join(system)
        if tools:
            payload["tools"] = [tool_param(t) for t in tools]
            choice = tool_choice_param(options)
            if choice is not None:
                payload["tool_choice"] = choice
        # The Messages shape has no repetition, frequency or presence penalty: not sent.
        return "/v1/messages", payload

    def parse(self, response: httpx.Response, latency_ms: float) -> ModelReply:
        try:
            body = response.json()
            usage = body.get("usage") or {}
            return ModelReply(
                message=assistant_message(body["content"]),
                finish_reason=clean_text(str(body.get("stop_reason") or "end_turn")),
                prompt_tokens=max(0, int(usage.get("input_tokens", 0))),
                completion_tokens=max(0, int(usage.get("output_tokens", 0))),
                latency_ms=latency_ms,
                model=clean_text(str(body.get("model", ""))),
                timings=body.get("timings") if isinstance(body.get("timings"), dict) else None,
                refused_calls=refused_calls(body),
                api=self.api,
                stop_sequence=body.get("stop_sequence")
                if isinstance(body.get("stop_sequence"), str)
                else None,
            )
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            raise ProviderError(
                f"the model server sent a reply that is not a Messages response: "
                f"{response.text[:300]!r}"
            ) from exc


def tool_choice_param(options: TurnOptions) -> dict[str, Any] | None:
    """The chat shape's tool_choice and parallel_tool_calls in the Messages shape's words."""
    choice = options.tool_choice
    if choice is None and options.parallel_tool_calls is not False:
        return None
    if isinstance(choice, dict):
        out: dict[str, Any] = {"type": "tool", "name": choice["function"]["name"]}
    else:
        out = {"type": {"required": "any", "none": "none"}.get(str(choice), "auto")}
    if options.parallel_tool_calls is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def tool_param(spec: dict[str, Any]) -> dict[str, Any]:
    function = spec["function"]
    tool = {"name": function["name"], "input_schema": function.get("parameters") or {}}
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if message["role"] == "tool":
        result = {
            "type": "tool_result",
            "tool_use_id": message.get("tool_call_id"),
            "content": str(content or ""),
        }
        return [{**result, "is_error": True} if message.get("is_error") else result]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": str(content)}] if content else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _input(str(function.get("arguments") or "{}")),
            }
        )
    return blocks


def messages_param(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript as Messages turns: tool results go in a user turn, and consecutive
    messages of one role (results and a note after them, a paused reply and its continuation)
    make one turn. An empty reply before the last turn says ``NO_CONTENT``."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "system":
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns[:-1]:
        if turn["role"] == "assistant" and not turn["content"]:
            turn["content"] = [{"type": "text", "text": NO_CONTENT}]
    for turn in turns:
        content = turn["content"]
        if len(content) == 1 and content[0]["type"] == "text" and turn["role"] == "user":
            turn["content"] = content[0]["text"]
    return turns


def assistant_message(content: list[dict[str, Any]]) -> dict[str, Any]:
    """A Messages reply's content blocks as the transcript's assistant message."""
    if not isinstance(content, list):
        raise TypeError("content is not a list of blocks")
    texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    message: dict[str, Any] = {"role": "assistant", "content": clean_text("".join(texts)) or None}
    calls = [
        {
            "id": clean_text(str(b.get("id", ""))),
            "type": "function",
            "function": {
                "name": clean_text(str(b.get("name", ""))),
                "arguments": clean_text(json.dumps(b.get("input") or {})),
            },
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    return message
