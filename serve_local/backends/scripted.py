"""The scripted provider: replies scripted per turn, real BPE token counts, same wire shape."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from serve_local import tokens
from serve_local.backends.base import Completion
from serve_local.errors import ModelNotFound
from serve_local.faults import FaultCounter, parse_model
from serve_local.scenarios import SCENARIOS, Reply, Transcript
from serve_local.schema import ChatRequest

PREFIX = "scripted:"


def _transcript(request: ChatRequest) -> Transcript:
    tool_messages = [m for m in request.messages if m.role == "tool"]
    users = [m.text() for m in request.messages if m.role == "user"]
    return Transcript(
        turn=sum(1 for m in request.messages if m.role == "assistant"),
        tool_text="\n".join(m.text() for m in tool_messages),
        question=users[-1] if users else "",
        results={m.tool_call_id or "": m.text() for m in tool_messages},
    )


def prompt_tokens(request: ChatRequest) -> int:
    """Tokens of the serialized request: every message and every tool spec."""
    payload: dict[str, Any] = {
        "messages": [m.model_dump(exclude_none=True) for m in request.messages],
    }
    if request.tools:
        payload["tools"] = [t.model_dump(exclude_none=True) for t in request.tools]
    return tokens.count_json(payload)


class ScriptedBackend:
    name = "scripted"
    load_error: str | None = None

    def __init__(self, latency_ms: float = 0.0) -> None:
        self.latency_ms = latency_ms
        self._faults = FaultCounter()

    def load(self) -> None:
        return None

    @property
    def ready(self) -> bool:
        return True

    def models(self) -> list[dict[str, Any]]:
        return [
            {"id": PREFIX + name, "backend": self.name, "description": (fn.__doc__ or "").strip()}
            for name, fn in SCENARIOS.items()
        ]

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        scenario_name, faults = parse_model(request.model.removeprefix(PREFIX))
        scenario = SCENARIOS.get(scenario_name) if request.model.startswith(PREFIX) else None
        if scenario is None:
            known = ", ".join(PREFIX + n for n in SCENARIOS)
            raise ModelNotFound(
                f"The scripted provider has no model {request.model!r}; use one of: {known}."
            )
        transcript = _transcript(request)
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000)
        self._faults.raise_http_fault(request, transcript.turn, faults)
        reply = scenario(transcript)
        if reply.calls and not request.tools:
            # Asked to answer without tools (a forced conclusion): report instead of calling.
            seen = transcript.tool_text.strip().splitlines()
            reply = Reply(
                content="I ran out of turns before I could finish. Last thing I saw: "
                + (seen[-1] if seen else "nothing yet")
                + "."
            )
        kinds = {f.kind for f in faults if f.applies(transcript.turn)}
        content, tool_calls = reply.content, reply.wire_tool_calls()
        finish, refusal = ("tool_calls" if tool_calls else "stop"), None
        if "trunc" in kinds:
            whole = content or json.dumps(tool_calls)
            content, tool_calls, finish = whole[: max(1, len(whole) // 2)], [], "length"
        if "refuse" in kinds:
            content, tool_calls, finish = None, [], "stop"
            refusal = "I can't help with that request."
        if "filter" in kinds:
            content, tool_calls, finish = None, [], "content_filter"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        if refusal:
            message["refusal"] = refusal
        return Completion(
            model=request.model,
            content=content,
            tool_calls=tool_calls,
            finish_reason=finish,
            prompt_tokens=prompt_tokens(request),
            completion_tokens=tokens.count_json(message),
            refusal=refusal,
        )
