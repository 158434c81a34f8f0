"""The scripted provider: replies scripted per turn, real BPE token counts, same wire shape."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any, cast

from serve_local import tokens
from serve_local.backends.base import Completion
from serve_local.backends.options import Option
from serve_local.backends.reply import cut_at_stop
from serve_local.errors import ModelNotFound, StartupError
from serve_local.faults import FaultCounter, parse_model
from serve_local.scenarios import SCENARIOS, AnswerKey, Reply, Scenario, Transcript, oracle
from serve_local.schema import ChatRequest

PREFIX = "scripted:"


def _transcript(request: ChatRequest) -> Transcript:
    tool_messages = [m for m in request.messages if m.role == "tool"]
    users = [m.text() for m in request.messages if m.role == "user"]
    replies = sum(1 for m in request.messages if m.role == "assistant")
    continuing = request.messages[-1].role == "assistant"
    return Transcript(
        turn=replies - 1 if continuing else replies,
        tool_text="\n".join(m.text() for m in tool_messages),
        question=users[-1] if users else "",
        results={m.tool_call_id or "": m.text() for m in tool_messages},
        partial=request.messages[-1].text() if continuing else None,
    )


def _continued(reply: Reply, partial: str | None) -> Reply:
    """The rest of a reply whose beginning the request already holds."""
    if not partial or not reply.content or not reply.content.startswith(partial):
        return reply
    return Reply(content=reply.content[len(partial) :] or None, calls=reply.calls)


def _stops(request: ChatRequest) -> tuple[str, ...]:
    stops = request.stop if isinstance(request.stop, list) else [request.stop or ""]
    return tuple(s for s in stops if s)


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

    def __init__(self, latency_ms: float = 0.0, answer_keys: Sequence[AnswerKey] = ()) -> None:
        self.latency_ms = latency_ms
        self._faults = FaultCounter()
        # The oracle answers the task sources whose answer keys it was given, besides the files'.
        keys = tuple(answer_keys)
        self.scenarios: dict[str, Scenario] = {
            **SCENARIOS,
            "oracle": partial(oracle, answer_keys=keys),
        }

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
        scenario = self.scenarios.get(scenario_name) if request.model.startswith(PREFIX) else None
        if scenario is None:
            known = ", ".join(PREFIX + n for n in SCENARIOS)
            raise ModelNotFound(
                f"The scripted provider has no model {request.model!r}; use one of: {known}."
            )
        transcript = _transcript(request)
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000)
        self._faults.raise_http_fault(request, transcript.turn, faults)
        reply = _continued(scenario(transcript), transcript.partial)
        if reply.calls and (not request.tools or request.tool_choice == "none"):
            # Asked to answer without a call (a forced conclusion): report instead of calling.
            seen = transcript.tool_text.strip().splitlines()
            reply = Reply(
                content="I ran out of turns before I could finish. Last thing I saw: "
                + (seen[-1] if seen else "nothing yet")
                + "."
            )
        kinds = {f.kind for f in faults if f.applies(transcript.turn)}
        if transcript.partial is not None:
            kinds.discard("pause")  # the paused reply is being continued
        content, tool_calls = reply.content, reply.wire_tool_calls()
        finish, refusal = ("tool_calls" if tool_calls else "stop"), None
        stop_reason, stop_sequence = None, None
        if content and not tool_calls and (stops := _stops(request)):
            content, stop_sequence = cut_at_stop(content, stops)
            stop_reason = "stop_sequence" if stop_sequence is not None else None
        whole = content or json.dumps(tool_calls)
        if "trunc" in kinds:
            content, tool_calls, finish = whole[: max(1, len(whole) // 2)], [], "length"
        if "stopseq" in kinds:
            content, tool_calls, finish = whole[: max(1, len(whole) // 2)], [], "stop"
            stop_reason, stop_sequence = "stop_sequence", (_stops(request) or ("STOP",))[0]
        if "pause" in kinds:
            content = (content or "")[: len(content or "") // 2] or None
            tool_calls, finish, stop_reason = [], "stop", "pause_turn"
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
            # Counted in a worker thread: a long request takes seconds to count, and the
            # event loop must keep answering /health meanwhile.
            prompt_tokens=await asyncio.to_thread(prompt_tokens, request),
            completion_tokens=tokens.count_json(message),
            refusal=refusal,
            stop_reason=stop_reason,
            stop_sequence=stop_sequence,
        )


OPTIONS: tuple[Option, ...] = (
    Option("--latency-ms", "delay before each reply", 0.0, type=float, metavar="MS"),
    Option(
        "--answer-key",
        "a task source's answer key for the oracle scenario, as MODULE:NAME (a function of the "
        "transcript: a reply, or None for a question it does not know); repeatable "
        "(make serve-scripted gives the sql source's)",
        (),
        repeat=True,
        metavar="MODULE:NAME",
    ),
)


def answer_key(spec: str) -> AnswerKey:
    """``MODULE:NAME`` imported; what cannot be is a :class:`StartupError` that says why."""
    module_name, _, attribute = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise StartupError(f"--answer-key {spec}: cannot be imported ({exc})") from exc
    if not callable(found):
        raise StartupError(f"--answer-key {spec}: not a function of the transcript")
    return cast(AnswerKey, found)


def from_args(args: argparse.Namespace) -> ScriptedBackend:
    """``--backend scripted``: no weights; ``--latency-ms`` before each reply; the oracle
    answers the task sources whose ``--answer-key`` it is given."""
    keys = [answer_key(spec) for spec in args.answer_key]
    return ScriptedBackend(latency_ms=args.latency_ms, answer_keys=keys)
