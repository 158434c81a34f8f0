"""Split a reply's text, as it is generated, into content pieces and tool-call deltas.

Used when the reply may hold calls and the call grammar constrains them. The reply so far is
read the way the finished reply will be (:func:`serve_local.callshape.scan_calls`, then
:func:`serve_local.toolcalls.take_calls`), up to the point where what follows could still change
the reading: a block or object not closed yet, wrapper braces that may still close, a possible
tag or fence. Whatever is settled goes out: prose as it is generated (less the blanks that the
finished content trims), each call once its block closes, in OpenAI's ``tool_calls`` delta form
(a head with id and name, then the arguments). What is sent is always a prefix of the finished
reply's content and calls, so a streamed reply carries the same content and calls as a whole
one, never a call twice, and nothing sent has to be taken back. What the finished reply holds
beyond that is sent after.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from serve_local.callshape import scan_calls
from serve_local.toolcalls import ToolSchemas, take_calls


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
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (name, arguments) of the calls sent

    def feed(self, piece: str) -> list[str | CallDelta]:
        self.text += piece
        settled = take_calls(
            scan_calls(self.text, complete=False), self.text, self.schemas, self.parallel
        )
        out = self._content(settled.content)
        for name, args in settled.calls[len(self.calls) :]:
            out += self._call(f"call_{uuid.uuid4().hex[:24]}", name, args)
        return out

    def _content(self, content: str | None) -> list[str | CallDelta]:
        content = content or ""
        if not content.startswith(self.content_sent) or content == self.content_sent:
            return []
        piece = content[len(self.content_sent) :]
        self.content_sent = content
        return [piece]

    def _call(self, call_id: str, name: str, args: dict[str, Any]) -> list[str | CallDelta]:
        self.calls.append((name, args))
        index = len(self.calls) - 1
        arguments = json.dumps(args, ensure_ascii=False)  # as the finished reply writes them
        return [CallDelta(index, "", call_id, name), CallDelta(index, arguments)]

    def rest(self, content: str | None, calls: list[dict[str, object]]) -> list[str | CallDelta]:
        """What the finished reply holds that has not gone out yet."""
        out = self._content(content)
        for call in calls:
            function = call["function"]
            assert isinstance(function, dict)
            name, args = str(function["name"]), json.loads(str(function["arguments"]))
            if (name, args) not in self.calls:
                out += self._call(str(call["id"]), name, args)
        return out
