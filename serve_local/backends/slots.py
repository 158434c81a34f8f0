"""Several requests decoded together in one llama.cpp context (``--slots N``).

Each request in flight holds one of the context's ``N`` sequences. One engine thread puts the
next token of every sequence that is generating, and a chunk of the prompt of every sequence
still reading one, into one ``llama_decode`` batch, then samples each sequence's token from its
own logits with its own sampler chain (llama.cpp's) after its own call grammar has masked them.
llama.cpp does the batching, the KV cache per sequence and the copying of cached prefixes;
what is ours is which sequence gets which request and the reply each sequence builds
(``ReplyText``, the same as with one slot).

A new request goes on in the free sequence that holds its conversation's earlier prompt
(:func:`choose`); a request with none takes the free sequence used longest ago, an empty one
first, so that no conversation between turns loses its cache to another that merely starts
alike. When another sequence (busy or free) shares a longer prefix than the chosen one holds,
that sequence's cache is copied first (``llama_memory_seq_cp``), so the system prompt and tool
definitions every conversation of an eval starts with are evaluated once, not once per
conversation.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from serve_local.backends.generation import Generated
from serve_local.backends.placement import MIN_COPY_GAIN, choose, common_prefix
from serve_local.backends.reply import ReplyText, Sampling
from serve_local.toolgrammar import CallConstraint


class EngineFailed(RuntimeError):
    """llama.cpp refused a batch (no room in the KV cache, or a decoding error)."""


@dataclass(eq=False)
class _Job:
    tokens: list[int]
    reply: ReplyText
    sampler: Any  # llama_cpp._internals.LlamaSampler
    arrived: float = field(default_factory=time.perf_counter)
    seq: int = -1
    cache_n: int = 0
    todo: list[int] = field(default_factory=list)  # tokens to evaluate next, in order
    pos: int = 0  # the position of todo[0]
    admitted: float = 0.0
    first: float | None = None
    result: Generated | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _sampler(llama_cpp: Any, n_vocab: int, sampling: Sampling, random_seed: int) -> Any:
    """The sampler chain the one-request path builds (llama-cpp-python's ``_init_sampler``
    with the settings our server sends): penalties, then greedy or top-p at a temperature."""
    from llama_cpp._internals import LlamaSampler

    chain = LlamaSampler()  # type: ignore[no-untyped-call]
    chain.add_penalties(
        n_vocab=n_vocab,
        penalty_last_n=64,
        penalty_repeat=sampling.repetition_penalty,
        penalty_freq=sampling.frequency_penalty,
        penalty_present=sampling.presence_penalty,
    )
    if sampling.temperature <= 0:
        chain.add_top_k(1)
        chain.add_greedy()  # type: ignore[no-untyped-call]
    else:
        chain.add_top_k(0)
        chain.add_top_p(sampling.top_p, 1)
        chain.add_min_p(0.0, 1)
        chain.add_temp(sampling.temperature)
        chain.add_dist(random_seed if sampling.seed is None else sampling.seed)
    return chain


class SlotEngine:
    """One llama.cpp context with ``slots`` sequences of ``n_ctx`` tokens each, and the thread
    that decodes them together."""

    def __init__(
        self,
        llm: Any,
        slots: int,
        n_ctx: int,
        n_threads: int,
        is_eog: Callable[[int], bool],
        reuse_prefix: bool = True,
        unified: bool = False,
        n_batch: int = 512,
    ) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaBatch, LlamaContext

        self._llama_cpp = llama_cpp
        self.llm = llm
        self.slots = slots
        self.n_batch = n_batch
        self.unified = unified
        self.reuse_prefix = reuse_prefix
        self._is_eog = is_eog
        self._n_vocab = int(llm.n_vocab())
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.n_ctx = n_ctx * slots
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = slots
        params.n_threads = params.n_threads_batch = n_threads
        # Unified: one KV buffer all sequences attend over (copies only relabel cells); split:
        # a stream of n_ctx cells per sequence (attention reads only its own; a copy moves
        # the stream's data). llama-server's default with --parallel is split.
        params.kv_unified = unified
        self._context = LlamaContext(model=llm._model, params=params, verbose=False)
        self._ctx = self._context.ctx
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._batch = LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=1, verbose=False)
        self._cached: list[list[int]] = [[] for _ in range(slots)]  # tokens in each sequence
        self._used = [0] * slots  # when each sequence was last given a request (admissions)
        self._prompts = [0] * slots  # the length of the prompt each sequence last took
        self._admitted = 0
        self._busy: list[_Job | None] = [None] * slots
        self._waiting: list[_Job] = []
        self._wake = threading.Condition()
        self._closed = False
        self._random_seed = int(llama_cpp.LLAMA_DEFAULT_SEED)
        # What the tests and the benchmark observe.
        self.batches = 0  # llama_decode calls
        self.decoded = 0  # tokens put through llama_decode
        self.decode_s = 0.0  # time spent in llama_decode
        self.sample_s = 0.0  # time spent masking and sampling, between batches
        self.copied = 0  # prefixes copied from another sequence
        self.peak = 0  # most requests in flight at once
        self.finished: Counter[str] = Counter()  # replies by finish reason
        self._paused = False
        self._thread = threading.Thread(target=self._run, name="slot-engine", daemon=True)
        self._thread.start()

    # -- the request side (worker threads) ---------------------------------------------------

    def generate(
        self,
        tokens: list[int],
        max_new: int,
        sampling: Sampling,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
        constraint: CallConstraint | None = None,
    ) -> Generated:
        """Decode ``tokens``' reply along with whatever else is in flight; blocks until done."""
        llm = self.llm
        reply = ReplyText(
            lambda out: bytes(llm.detokenize(out)), max_new, sampling, cancel, on_text, constraint
        )
        job = _Job(
            tokens=list(tokens),
            reply=reply,
            sampler=_sampler(self._llama_cpp, self._n_vocab, sampling, self._random_seed),
        )
        with self._wake:
            if self._closed:
                raise EngineFailed("the model is shutting down")
            self._waiting.append(job)
            self._wake.notify()
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=30)

    @property
    def in_flight(self) -> int:
        return sum(job is not None for job in self._busy)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def pause(self) -> None:
        """Admit no request until :meth:`resume` (those in flight go on): a test lines several
        requests up so that they start in one batch."""
        with self._wake:
            self._paused = True

    def resume(self) -> None:
        with self._wake:
            self._paused = False
            self._wake.notify()

    def time_decode(
        self, sizes: tuple[int, ...], prompt: int = 256, repeats: int = 5
    ) -> list[dict[str, float]]:
        """What one ``llama_decode`` costs as its batch grows (for the benchmark; call it while
        nothing is in flight): every sequence first reads a ``prompt``-token prompt, then
        batches of each size put one token per sequence (several per sequence beyond
        ``slots``); the median of ``repeats`` in milliseconds, and per token."""
        lib, batch = self._llama_cpp, self._batch.batch

        def put(entries: list[tuple[int, int, int, bool]]) -> float:
            for i, (token, pos, seq, logits) in enumerate(entries):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
                batch.seq_id[i][0], batch.logits[i] = seq, logits
            batch.n_tokens = len(entries)
            start = time.perf_counter()
            if lib.llama_decode(self._ctx, batch) != 0:
                raise EngineFailed("llama_decode failed")
            return (time.perf_counter() - start) * 1000

        n = self.slots
        for seq in range(n):
            lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
            self._cached[seq] = []
            put([(100 + i % 50, i, seq, i == prompt - 1) for i in range(prompt)])
        rows = []
        for size in sizes:
            per_seq = max(1, size // n)
            times = [
                put([(200, prompt + step * per_seq + j // n, j % n, True) for j in range(size)])
                for step in range(repeats)
            ]
            for seq in range(n):
                lib.llama_memory_seq_rm(self._memory, seq, prompt, -1)
            ms = sorted(times)[len(times) // 2]
            rows.append({"batch": size, "ms": round(ms, 1), "ms_per_token": round(ms / size, 2)})
        for seq in range(n):
            lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
        return rows

    # -- the engine thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed and not any(self._busy):
                    if self._waiting and not self._paused:
                        break
                    self._wake.wait()
                if self._closed:
                    for job in [*self._waiting, *(j for j in self._busy if j)]:
                        self._fail(job, EngineFailed("the model is shutting down"))
                    return
                if not self._paused:
                    self._admit()
            try:
                self._step()
            except Exception as exc:  # a failed batch fails the requests in it, not the engine
                for job in [j for j in self._busy if j]:
                    self._fail(job, exc)

    def _admit(self) -> None:
        """Give each waiting request a free sequence, its cache primed with the longest
        prefix any sequence holds."""
        for job in list(self._waiting):
            if None not in self._busy:
                return
            tokens = job.tokens
            room = len(tokens) - 1  # the last prompt token is evaluated again, for its logits
            free = [s for s in range(self.slots) if self._busy[s] is None]
            if not self.reuse_prefix:
                seq, keep, source = free[0], 0, None
            else:
                shares = [min(common_prefix(c, tokens), room) for c in self._cached]
                # A prompt still being read that shares more is worth waiting for: the
                # conversations an eval starts at once share their system prompt and tools.
                reading = [j.tokens for j in self._busy if j is not None and len(j.todo) > 1]
                coming = max((min(common_prefix(t, tokens), room) for t in reading), default=0)
                if coming >= max(shares) + MIN_COPY_GAIN:
                    continue
                seq, source, keep = choose(shares, self._prompts, self._used, free)
            self._waiting.remove(job)
            self._place(seq, source, keep)
            self._cached[seq] = tokens[:keep]
            job.seq, job.cache_n, job.pos, job.todo = seq, keep, keep, tokens[keep:]
            job.admitted = time.perf_counter()
            self._busy[seq] = job
            self._admitted += 1
            self._used[seq] = self._admitted
            self._prompts[seq] = len(tokens)
            self.peak = max(self.peak, self.in_flight)

    def _place(self, seq: int, source: int | None, keep: int) -> None:
        """Sequence ``seq`` holds the first ``keep`` tokens: its own, or ``source``'s."""
        lib, memory = self._llama_cpp, self._memory
        if source is None:
            lib.llama_memory_seq_rm(memory, seq, keep, -1)
            return
        lib.llama_memory_seq_rm(memory, seq, -1, -1)
        if self.unified:
            lib.llama_memory_seq_cp(memory, source, seq, 0, keep)
        else:  # across streams llama.cpp copies a whole stream; the tail is dropped after
            lib.llama_memory_seq_cp(memory, source, seq, -1, -1)
            lib.llama_memory_seq_rm(memory, seq, keep, -1)
        self.copied += 1

    def _step(self) -> None:
        """One batch: each generating sequence's last token first, then prompt chunks."""
        batch = self._batch.batch
        n = 0
        wants_logits: list[tuple[_Job, int]] = []
        jobs = [j for j in self._busy if j is not None]
        for job in jobs:
            if job.reply.cancel.is_set() and job.first is None:
                job.reply.finish = "cancelled"  # gone while its prompt was still read
                self._finish(job)
        jobs = [j for j in self._busy if j is not None]
        # Generating sequences (one token to put) go before prompt chunks.
        for job in sorted(jobs, key=lambda j: len(j.todo) > 1 or j.first is None):
            take = min(len(job.todo), self.n_batch - n)
            if take <= 0:
                continue
            for i in range(take):
                batch.token[n] = job.todo[i]
                batch.pos[n] = job.pos + i
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = job.seq
                batch.logits[n] = False
                n += 1
            self._cached[job.seq].extend(job.todo[:take])
            job.pos += take
            job.todo = job.todo[take:]
            if not job.todo:  # the whole prompt (or the last token) is in: sample after it
                batch.logits[n - 1] = True
                wants_logits.append((job, n - 1))
        if n == 0:
            return
        batch.n_tokens = n
        started = time.perf_counter()
        failed = self._llama_cpp.llama_decode(self._ctx, batch)
        decoded = time.perf_counter()
        self.batches += 1
        self.decoded += n
        self.decode_s += decoded - started
        if failed != 0:
            for job in jobs:
                self._cached[job.seq] = []
                self._llama_cpp.llama_memory_seq_rm(self._memory, job.seq, -1, -1)
            raise EngineFailed(f"llama_decode returned {failed} (a batch of {n} tokens)")
        for job, index in wants_logits:
            try:
                self._sample(job, index)
            except Exception as exc:  # this request's grammar or sampler: its own failure
                self._fail(job, exc)
        self.sample_s += time.perf_counter() - decoded

    def _sample(self, job: _Job, index: int) -> None:
        constraint = job.reply.constraint
        if constraint is not None:
            allowed = constraint.allowed()
            if allowed is not None:
                pointer = self._llama_cpp.llama_get_logits_ith(self._ctx, index)
                logits = np.ctypeslib.as_array(
                    ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(self._n_vocab,)
                )
                logits[~allowed[: self._n_vocab]] = -np.inf
        token = int(job.sampler.sample(self._context, index))
        job.first = job.first or time.perf_counter()
        if job.reply.add(token, self._is_eog(token)):
            self._finish(job)
        else:
            job.todo = [token]

    def _finish(self, job: _Job) -> None:
        job.reply.flush()
        end = time.perf_counter()
        first = job.first or end
        job.result = Generated(
            text=job.reply.text,
            finish_reason=job.reply.finish,
            prompt_n=len(job.tokens) - job.cache_n,
            cache_n=job.cache_n,
            predicted_n=len(job.reply.tokens),
            prompt_ms=(first - job.admitted) * 1000,
            predicted_ms=(end - first) * 1000,
            stop_sequence=job.reply.stop_sequence,
        )
        self.finished[job.reply.finish] += 1
        self._release(job)

    def _fail(self, job: _Job, exc: BaseException) -> None:
        job.error = exc
        if job.seq >= 0 and self._busy[job.seq] is job:
            self._cached[job.seq] = []
            self._llama_cpp.llama_memory_seq_rm(self._memory, job.seq, -1, -1)
        self._release(job)

    def _release(self, job: _Job) -> None:
        if job.seq >= 0 and self._busy[job.seq] is job:
            self._busy[job.seq] = None
        job.done.set()
