"""Split a reply's text, as it is generated, into content pieces and tool-call deltas.

Used when the reply may hold calls and the call grammar constrains them: from the moment the
reply starts a call (:func:`serve_local.toolgrammar.trigger_at`) the grammar guarantees its
shape, ``{"name": "<tool>", "arguments": {...}}``. Each call goes out as soon as its object
closes, in OpenAI's ``tool_calls`` delta form (a head with id and name, then the arguments),
and only if it does not repeat a call already sent: a streamed reply, like a whole one, never
carries the same call twice, and nothing sent has to be taken back. Prose streams as it is
generated; text that might still turn into a call (blank, a fence, a partial tag) is held
back until it is clearly prose. What the finished reply holds beyond that is sent after.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from serve_local.callshape import TAG_OPEN
from serve_local.toolcalls import CallScanner, ToolSchemas
from serve_local.toolgrammar import may_start_call, trigger_at


@dataclass
class CallDelta:
    """One ``tool_calls`` delta: the head (id and name) of call ``index``, or arguments text."""

    index: int
    arguments: str
    id: str | None = None
    name: str | None = None

    def wire(self) -> dict[str, object]:
        function: dict[str, object] = {"arguments": self.arguments}
        delta: dict[str, object] = {"index": self.index, "function": function}
        if self.id is not None:
            delta.update(id=self.id, type="function")
            function["name"] = self.name
        return delta


class CallStreamer:
    def __init__(self, schemas: ToolSchemas, parallel: bool) -> None:
        self.schemas, self.parallel = schemas, parallel
        self.text = ""
        self.content_sent = ""
        self.calls: list[tuple[str, object]] = []  # (name, arguments) of the calls sent
        self._started = False
        self._scanner = CallScanner()

    def feed(self, piece: str) -> list[str | CallDelta]:
        self.text += piece
        if not self._started:
            start = trigger_at(self.text)
            if start is None:
                return self._content(self._prose_end())
            self._started, self._scanner = True, CallScanner(start)
            return self._content(start) + self._closed_calls()
        return self._closed_calls()

    def _prose_end(self) -> int:
        """How much of the text is surely prose (not the start of a call)."""
        if may_start_call(self.text):
            return 0
        tail = self.text.rfind("<")
        if tail >= 0 and TAG_OPEN.startswith(self.text[tail:]):
            return tail
        return len(self.text)

    def _content(self, end: int) -> list[str | CallDelta]:
        piece = self.text[len(self.content_sent) : end]
        if not piece or not self.text[:end].strip():
            return []
        self.content_sent += piece
        return [piece]

    def _closed_calls(self) -> list[str | CallDelta]:
        out: list[str | CallDelta] = []
        for name, arguments in self._scanner.closed(self.text):
            try:
                call = (name, json.loads(arguments))
            except json.JSONDecodeError:
                continue  # left for the finished reply's parser to judge
            if call in self.calls or not self._takes(*call):
                continue
            self.calls.append(call)
            index, call_id = len(self.calls) - 1, f"call_{uuid.uuid4().hex[:24]}"
            out += [CallDelta(index, "", call_id, name), CallDelta(index, arguments)]
        return out

    def _takes(self, name: str, args: object) -> bool:
        """A call the finished reply will hold too: offered, valid, within the parallel limit."""
        if not self.parallel and self.calls:
            return False
        return name in self.schemas and isinstance(args, dict) and self.schemas.accepts(name, args)

    def rest(self, content: str | None, calls: list[dict[str, object]]) -> list[str | CallDelta]:
        """What the finished reply holds that has not gone out yet."""
        out: list[str | CallDelta] = []
        sent = self.content_sent.strip()
        if content and content.startswith(sent) and content[len(sent) :]:
            out.append(content[len(sent) :])
        for call in calls:
            function = call["function"]
            assert isinstance(function, dict)
            key = (function["name"], json.loads(str(function["arguments"])))
            if key in self.calls:
                continue
            self.calls.append(key)
            index = len(self.calls) - 1
            out += [
                CallDelta(index, "", str(call["id"]), str(function["name"])),
                CallDelta(index, str(function["arguments"])),
            ]
        return out
