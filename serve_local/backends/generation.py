"""What every model backend shares: sampling settings, limits, the queue, the reply shape."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from typing import Any

from serve_local.backends.base import Completion
from serve_local.backends.reply import Sampling
from serve_local.callstream import CallDelta, CallStreamer
from serve_local.chat_template import ChatTemplate
from serve_local.errors import APIError, InvalidRequest
from serve_local.models import ResolvedModel
from serve_local.schema import ChatRequest, Timings
from serve_local.toolcalls import ToolSchemas, parse_tool_calls
from serve_local.toolgrammar import (
    CallConstraint,
    CallGrammar,
    CallPolicy,
    GrammarError,
    Mode,
)
from serve_local.written import WrittenReplies

DEFAULT_MAX_TOKENS = 512


@dataclass
class Generated:
    text: str
    finish_reason: str  # stop | length | cancelled
    prompt_n: int
    cache_n: int
    predicted_n: int
    prompt_ms: float
    predicted_ms: float
    stop_sequence: str | None = None  # the one that ended the text, when one did
    draft_n: int | None = None  # tokens drafted (speculative decoding), when on
    draft_n_accepted: int | None = None  # of those, kept


@dataclass
class Limits:
    n_ctx: int
    default_max_tokens: int = DEFAULT_MAX_TOKENS

    def max_new_tokens(self, request: ChatRequest, prompt_tokens: int) -> int:
        """Room left for the reply; a prompt that does not fit is the client's error (400)."""
        if prompt_tokens >= self.n_ctx:
            raise InvalidRequest(
                f"This model's context is {self.n_ctx} tokens; the prompt has {prompt_tokens}. "
                "Shorten the conversation or start the server with a larger --ctx.",
                param="messages",
                code="context_length_exceeded",
            )
        asked = request.max_completion_tokens or request.max_tokens or self.default_max_tokens
        return min(asked, self.n_ctx - prompt_tokens)


class GenerationQueue:
    """At most ``slots`` generations at a time per model, each in a worker thread of its own;
    the wait is reported. One slot: one request after another. Several: the backend decodes
    the requests in flight together (``serve_local.backends.slots``), each thread waiting for
    its own reply.

    A slot is held until the worker thread returns, not until the awaiting request does: a
    thread cannot be interrupted, so a request cancelled mid-generation leaves its thread
    running on the model (until it sees the cancel), and the next generation waits for it.
    """

    def __init__(self, slots: int = 1) -> None:
        self.slots = slots
        self._free = asyncio.Semaphore(slots)
        self._in_use = 0
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def generating(self) -> bool:
        """A worker thread is generating (possibly for a request that is gone)."""
        return self._in_use > 0

    async def run(self, work: Callable[..., Generated], *args: object) -> tuple[Generated, float]:
        arrived = time.perf_counter()
        await self._free.acquire()
        queue_ms = (time.perf_counter() - arrived) * 1000
        self._in_use += 1
        try:
            if self._threads is None:  # its own threads: the default pool is for tokenizing
                self._threads = concurrent.futures.ThreadPoolExecutor(
                    self.slots, thread_name_prefix="generate"
                )
            thread = asyncio.get_running_loop().run_in_executor(self._threads, work, *args)
        except BaseException:
            self._release()
            raise
        thread.add_done_callback(self._finished)
        generated: Generated = await asyncio.shield(thread)
        return generated, queue_ms

    def _release(self) -> None:
        self._in_use -= 1
        self._free.release()

    def _finished(self, thread: asyncio.Future[Generated]) -> None:
        self._release()
        if not thread.cancelled():
            thread.exception()  # retrieved here when the request that wanted it is gone


def call_policy(request: ChatRequest) -> CallPolicy | None:
    """The calls ``request`` allows, or None when it allows none (no tools, or ``"none"``)."""
    if not request.tools or request.tool_choice == "none":
        return None
    choice = request.tool_choice or "auto"
    if isinstance(choice, dict):  # {"type": "function", "function": {"name": X}}, checked
        choice = str(choice["function"]["name"])
    tools = {t.function.name: t.function.parameters for t in request.tools}
    return CallPolicy(tools, choice, request.parallel_tool_calls is not False)


def to_completion(
    request: ChatRequest,
    model_name: str,
    generated: Generated,
    queue_ms: float,
    constraint: CallConstraint | None = None,
) -> Completion:
    rules = call_policy(request)
    schemas = ToolSchemas(constraint.schemas if constraint else rules.allowed() if rules else {})
    parsed = parse_tool_calls(generated.text, schemas, parallel=rules.parallel if rules else True)
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        for name, args in parsed.calls
    ]
    finish = generated.finish_reason
    if calls and finish == "stop":
        finish = "tool_calls"
    return Completion(
        model=model_name,
        # With tools offered, the content is the text around the calls, trimmed, whether or not
        # it holds any: what a streamed reply can send before it knows.
        content=parsed.content if rules is not None else generated.text,
        tool_calls=calls,
        finish_reason=finish,
        prompt_tokens=generated.prompt_n + generated.cache_n,
        completion_tokens=generated.predicted_n,
        stop_reason="stop_sequence" if generated.stop_sequence is not None else None,
        stop_sequence=generated.stop_sequence,
        refused_calls=[asdict(refused) for refused in parsed.refused],
        grammar_loosened=[asdict(note) for note in constraint.loosened] if constraint else [],
        timings=Timings(
            prompt_n=generated.prompt_n,
            cache_n=generated.cache_n,
            prompt_ms=round(generated.prompt_ms, 3),
            predicted_n=generated.predicted_n,
            predicted_ms=round(generated.predicted_ms, 3),
            queue_ms=round(queue_ms, 3),
            draft_n=generated.draft_n,
            draft_n_accepted=generated.draft_n_accepted,
        ),
    )


class LocalBackend:
    """The request path the model backends share; a subclass loads weights and generates."""

    name = "local"

    def __init__(
        self, model: ResolvedModel, n_ctx: int, n_threads: int | None, tool_grammar: Mode = "lazy"
    ) -> None:
        self.model = model
        self.tool_grammar = tool_grammar
        self._call_grammar: CallGrammar | None = None
        self.limits = Limits(n_ctx=n_ctx)
        self.n_threads = n_threads or os.cpu_count() or 1
        self.load_error: str | None = None
        self.load_seconds: float | None = None
        self._template: ChatTemplate | None = None
        # The text of the vocabulary's control tokens: markup when the template writes them,
        # plain text when a message does (set at load).
        self._markers: tuple[str, ...] = ()
        self._sha256: str | None = None
        self._queue: GenerationQueue | None = None
        self.slots = 1  # requests generated at once (a backend that batches sets more)
        # One prompt rendered and tokenized at a time, in a worker thread (never on the loop).
        self._render_lock = threading.Lock()
        # The text of the replies with calls this server wrote, so that they come back into
        # the next prompt as written and the prefix cache keeps them (serve_local.written).
        self.written: WrittenReplies | None = None  # on with --written-replies

    @property
    def ready(self) -> bool:
        raise NotImplementedError

    @property
    def streams_calls(self) -> bool:
        return self.tool_grammar == "lazy"

    def load(self) -> None:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Backend-specific fields for ``/v1/models``."""
        return {}

    def models(self) -> list[dict[str, Any]]:
        return [
            {
                "id": self.model.name,
                "backend": self.name,
                "sha256": self._sha256,
                "path": str(self.model.path),
                "source": self.model.source,
                "context_length": self.limits.n_ctx,
                "threads": self.n_threads,
                "tool_grammar": self.tool_grammar,
                # Past replies with calls rendered as the model wrote them (serve_local.written).
                "written_replies": self.written is not None,
                **self.describe(),
                "ready": self.ready,
            }
        ]

    def prompt_tokens(self, request: ChatRequest) -> list[int]:
        """The tokens the model sees for ``request``: its chat template rendered, tokenized."""
        if self._template is None:
            raise APIError("The model is still loading; retry shortly.", status_code=503)
        parts = self._template.render_parts(request, self._markers, self.written)
        return [
            token
            for i, (text, markup) in enumerate(parts)
            for token in self._tokens(text, markup=markup, first=i == 0)
        ]

    def generate(
        self, tokens: list[int], max_new: int, sampling: Sampling, cancel: threading.Event
    ) -> Generated:
        """Generate from ``tokens`` in the calling thread, bypassing HTTP, the queue and
        tool-call parsing: the runtime's floor that the serving benchmark measures against."""
        return self._generate(tokens, max_new, sampling, cancel)

    def _tokens(self, text: str, markup: bool = True, first: bool = True) -> list[int]:
        """``text`` as tokens; control tokens are read as such only in ``markup``, and a BOS
        the model wants goes before the ``first`` piece of a prompt."""
        raise NotImplementedError

    def _vocabulary(self) -> Any:
        """The loaded model's vocabulary as an ``llguidance.LLTokenizer`` (for call grammars)."""
        raise NotImplementedError

    def _load_call_grammar(self) -> None:
        """Build the call grammar compiler at load time, when tool calls are constrained."""
        if self.tool_grammar == "lazy":
            self._call_grammar = CallGrammar(self._vocabulary())

    def _generate(
        self,
        tokens: list[int],
        max_new: int,
        sampling: Sampling,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
        constraint: CallConstraint | None = None,
    ) -> Generated:
        """Generate in a worker thread; ``on_text`` receives the text as it becomes final.

        ``constraint``, when given, sees every token and masks the next ones once a call starts.
        """
        raise NotImplementedError

    def _constraint(self, request: ChatRequest) -> CallConstraint | None:
        rules = call_policy(request)
        if rules is None or self._call_grammar is None:
            return None
        try:
            return self._call_grammar.constraint(rules)
        except GrammarError as exc:
            raise InvalidRequest(
                f"The offered tools cannot be turned into a call grammar: {exc}",
                param="tools",
                code="invalid_value",
            ) from exc

    async def _prepare(self, request: ChatRequest) -> tuple[GenerationQueue, list[int], int]:
        if not self.ready or self._template is None:
            raise APIError("The model is still loading; retry shortly.", status_code=503)
        if self._queue is None:
            self._queue = GenerationQueue(self.slots)  # created on the server's event loop
        # Rendering and tokenizing take time that grows with the prompt: off the event loop.
        tokens = await asyncio.to_thread(self._tokenized, request)
        return self._queue, tokens, self.limits.max_new_tokens(request, len(tokens))

    def _tokenized(self, request: ChatRequest) -> list[int]:
        with self._render_lock:
            return self.prompt_tokens(request)

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        queue, tokens, max_new = await self._prepare(request)
        constraint = self._constraint(request)
        generated, queue_ms = await queue.run(
            self._generate,
            tokens,
            max_new,
            Sampling.of(request),
            cancel or threading.Event(),
            None,
            constraint,
        )
        return self._written(
            to_completion(request, self.model.name, generated, queue_ms, constraint), generated
        )

    def _written(self, completion: Completion, generated: Generated) -> Completion:
        """Remember the text of a reply whose calls go back to the client (finished, not cut
        by the token cap), for when the client sends the reply back."""
        if (
            self.written is not None
            and completion.tool_calls
            and completion.finish_reason == "tool_calls"
        ):
            self.written.remember(completion.content, completion.tool_calls, generated.text)
        return completion

    async def stream(
        self, request: ChatRequest, cancel: threading.Event
    ) -> AsyncIterator[str | CallDelta | Completion]:
        """Text as it is generated, calls as each one closes (when the call grammar constrains
        them), then the finished completion."""
        queue, tokens, max_new = await self._prepare(request)
        constraint = self._constraint(request)
        calls = (
            None
            if constraint is None
            else CallStreamer(ToolSchemas(constraint.schemas), constraint.rules.parallel)
        )
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str] = asyncio.Queue()

        def on_text(piece: str) -> None:
            loop.call_soon_threadsafe(pieces.put_nowait, piece)

        work = asyncio.ensure_future(
            queue.run(
                self._generate, tokens, max_new, Sampling.of(request), cancel, on_text, constraint
            )
        )
        try:
            while not work.done() or not pieces.empty():
                getter = asyncio.ensure_future(pieces.get())
                await asyncio.wait({getter, work}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                elif calls is None:
                    yield getter.result()
                else:
                    for item in calls.feed(getter.result()):
                        yield item
            generated, queue_ms = work.result()
        finally:
            cancel.set()  # the client went away mid-stream: stop generating
        completion = self._written(
            to_completion(request, self.model.name, generated, queue_ms, constraint), generated
        )
        for item in calls.rest(completion.content, completion.tool_calls) if calls else []:
            yield item
        yield completion
