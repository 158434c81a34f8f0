"""Faults the scripted provider produces on request, named in the model string.

    scripted:<scenario>[+<fault>]...      fault = <kind>[x<count>][@<turn>]

kinds: ``429`` (with ``retry-after-ms``), ``500``, ``401``, ``trunc`` (the reply cut short with
``finish_reason: length``, stop reason ``max_tokens``), ``refuse`` (a refusal), ``filter``
(``finish_reason: content_filter``), ``stopseq`` (the reply cut at a stop sequence: the request's
first, or ``STOP`` when it names none; stop reason ``stop_sequence``) and ``pause`` (the first
half of the reply, stop reason ``pause_turn``; the request that sends it back unchanged gets the
rest). In the chat shape, which has no word for the last two, both read ``finish_reason: stop``.
``x<count>`` repeats an HTTP fault for that many requests of the same transcript (default 1;
``x999`` is "forever"); ``@<turn>`` limits it to one turn index.
Counting requests is the one piece of state the scripted provider keeps, and only for faults.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from serve_local.errors import InvalidRequest, ScriptedFault
from serve_local.schema import ChatRequest

HTTP_FAULTS = {"429", "500", "401"}
REPLY_FAULTS = {"trunc", "refuse", "filter", "stopseq", "pause"}
_FAULT = re.compile(r"^(?P<kind>\d+|[a-z]+)(?:x(?P<count>\d+))?(?:@(?P<turn>\d+))?$")
RETRY_AFTER_MS = 50


@dataclass(frozen=True)
class Fault:
    kind: str
    count: int = 1
    turn: int | None = None

    def applies(self, turn: int) -> bool:
        return self.turn is None or self.turn == turn


def parse_model(model: str) -> tuple[str, list[Fault]]:
    """``plan+429x2@1`` -> ("plan", [Fault("429", 2, 1)])."""
    name, *specs = model.split("+")
    faults = []
    for spec in specs:
        m = _FAULT.match(spec)
        if not m or m["kind"] not in HTTP_FAULTS | REPLY_FAULTS:
            raise InvalidRequest(
                f"unknown scripted fault {spec!r}; write <kind>[x<count>][@<turn>] with kind "
                f"one of {', '.join(sorted(HTTP_FAULTS | REPLY_FAULTS))}",
                param="model",
                code="invalid_value",
            )
        faults.append(Fault(m["kind"], int(m["count"] or 1), int(m["turn"]) if m["turn"] else None))
    return name, faults


class FaultCounter:
    def __init__(self) -> None:
        self._served: dict[str, int] = {}

    def raise_http_fault(self, request: ChatRequest, turn: int, faults: list[Fault]) -> None:
        for fault in faults:
            if fault.kind not in HTTP_FAULTS or not fault.applies(turn):
                continue
            transcript = request.model_dump_json(include={"messages"})
            key = hashlib.sha256(f"{request.model}|{fault}|{transcript}".encode()).hexdigest()
            served = self._served.get(key, 0)
            if served >= fault.count:
                continue
            self._served[key] = served + 1
            if fault.kind == "429":
                raise ScriptedFault(
                    "Rate limit reached (scripted). Retry after the delay.",
                    status_code=429,
                    error_type="rate_limit_error",
                    code="rate_limit_exceeded",
                    headers={"retry-after-ms": str(RETRY_AFTER_MS), "retry-after": "1"},
                )
            if fault.kind == "401":
                raise ScriptedFault(
                    "Invalid API key (scripted).",
                    status_code=401,
                    error_type="authentication_error",
                    code="invalid_api_key",
                )
            raise ScriptedFault("The server had an error (scripted).", status_code=500)
