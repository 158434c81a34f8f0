"""Replies as the model wrote them: what keeps the prefix cache across a tool-using turn.

A reply that calls a tool comes back in the next request as a structured assistant message
(content and ``tool_calls``), which the chat template renders in its own form: Qwen's
template writes ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``, while the
model may have written a bare object or a fenced one, spaced its own way. The rendered prompt
then differs from the tokens in the cache from the reply's first token, and every reply is
evaluated again on the next turn (measured on the SQL analyst: 0 of 4,191 reply tokens found
in the cache).

So the server remembers, for each reply with calls it generated, the text the model wrote,
keyed by what the client will send back (the content and each call's name and arguments;
never the ids, which clients rename). A request whose assistant message matches one is
rendered with that text as the message's content: the prompt the model sees is the prompt it
wrote, token for token. Bounded (least recently used first out); only the server's own replies
are ever in it, so no client can put markup into a prompt this way.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from threading import Lock
from typing import Any

CAPACITY = 512


def _arguments(arguments: Any) -> str:
    """Arguments, as a string or as an object, in one canonical form."""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def reply_key(content: str | None, calls: Iterable[Mapping[str, Any]]) -> str:
    """What identifies a reply with calls: its text and each call's name and arguments."""
    functions = [c.get("function", c) for c in calls]
    return json.dumps(
        [
            (content or "").strip(),
            [(f.get("name"), _arguments(f.get("arguments"))) for f in functions],
        ],
        ensure_ascii=False,
    )


class WrittenReplies:
    """The text of the last :data:`CAPACITY` replies with calls, by :func:`reply_key`."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = Lock()

    def remember(self, content: str | None, calls: list[dict[str, Any]], text: str) -> None:
        if not calls:
            return  # a reply in words comes back as the words the model wrote
        with self._lock:
            key = reply_key(content, calls)
            self._texts[key] = text
            self._texts.move_to_end(key)
            while len(self._texts) > self.capacity:
                self._texts.popitem(last=False)

    def written(self, message: Mapping[str, Any]) -> str | None:
        """The text the model wrote for this assistant message, if this server wrote it."""
        calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not calls:
            return None
        with self._lock:
            key = reply_key(message.get("content"), calls)
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
            return text

    def __len__(self) -> int:
        return len(self._texts)
