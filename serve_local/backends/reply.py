"""A reply as it is sampled: the sampling a request asks for (greedy unless it says otherwise),
and its text as its tokens arrive, cut at a stop sequence, streamed, held to the call grammar
and ended by the token cap or a cancel (``ReplyText``), which every llama.cpp decoding path
shares."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from serve_local.schema import ChatRequest
from serve_local.toolgrammar import CallConstraint


@dataclass(frozen=True)
class Sampling:
    """Greedy unless the request asks otherwise."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    repetition_penalty: float = 1.0  # divides the logits of tokens already in the context
    frequency_penalty: float = 0.0  # subtracted once per earlier occurrence (llama only)
    presence_penalty: float = 0.0  # subtracted once if the token occurred (llama only)

    @classmethod
    def of(cls, request: ChatRequest) -> Sampling:
        stop = request.stop if isinstance(request.stop, list) else [request.stop or ""]
        return cls(
            temperature=request.temperature or 0.0,
            top_p=request.top_p if request.top_p is not None else 1.0,
            seed=request.seed,
            stop=tuple(s for s in stop if s),
            repetition_penalty=request.repetition_penalty or request.repeat_penalty or 1.0,
            frequency_penalty=request.frequency_penalty or 0.0,
            presence_penalty=request.presence_penalty or 0.0,
        )


def cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, str | None]:
    """``text`` up to the first stop sequence, and that sequence (None when none is found)."""
    found = [(i, s) for s in stops if (i := text.find(s)) >= 0]
    if not found:
        return text, None
    at, stop = min(found)
    return text[:at], stop


class ReplyText:
    """One reply's text as its tokens arrive: detokenized, cut at a stop sequence, streamed
    with what could still be a stop sequence held back, fed to the call grammar, ended by the
    token cap or a cancel. Every llama.cpp decoding path (one request, several in one batch)
    feeds its tokens through one of these."""

    def __init__(
        self,
        detokenize: Callable[[list[int]], bytes],
        max_new: int,
        sampling: Sampling,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
        constraint: CallConstraint | None = None,
    ) -> None:
        self._detokenize = detokenize
        self.max_new = max_new
        self.sampling = sampling
        self.cancel = cancel
        self.on_text = on_text
        self.constraint = constraint
        self._holdback = max((len(s) for s in sampling.stop), default=1) - 1
        self._sent = 0
        self.tokens: list[int] = []
        self.text = ""
        self.finish = "length"
        self.stop_sequence: str | None = None

    def add(self, token: int, end_of_generation: bool) -> bool:
        """Take the next generated token; True when the reply is over."""
        if end_of_generation:
            self.finish = "stop"
            return True
        self.tokens.append(token)
        self.text = self._detokenize(self.tokens).decode("utf-8", errors="ignore")
        if self.sampling.stop:
            self.text, self.stop_sequence = cut_at_stop(self.text, self.sampling.stop)
            if self.stop_sequence is not None:
                self.finish = "stop"
                return True
        if self.on_text is not None and len(self.text) - self._holdback > self._sent:
            self.on_text(self.text[self._sent : len(self.text) - self._holdback])
            self._sent = len(self.text) - self._holdback
        if self.constraint is not None and self.constraint.observe(token, self.text):
            self.finish = "stop"
            return True
        if len(self.tokens) >= self.max_new:
            return True
        if self.cancel.is_set():
            self.finish = "cancelled"
            return True
        return False

    def flush(self) -> None:
        """Send what was held back (the reply is over)."""
        if self.on_text is not None and len(self.text) > self._sent:
            self.on_text(self.text[self._sent :])
            self._sent = len(self.text)
