"""The llama.cpp backend (llama-cpp-python): a GGUF on the CPU, KV cache kept warm."""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from serve_local.backends.draft import (
    DRAFT_MODES,
    DraftCounts,
    DraftSettings,
    enable_prompt_lookup,
)
from serve_local.backends.generation import Generated, LocalBackend
from serve_local.backends.options import MODEL_OPTIONS, Option
from serve_local.backends.placement import common_prefix
from serve_local.backends.reply import ReplyText, Sampling
from serve_local.backends.slots import SlotEngine
from serve_local.chat_template import ChatTemplate
from serve_local.models import ModelUnavailable, ResolvedModel, check_weights, resolve
from serve_local.toolgrammar import CallConstraint, Mode
from serve_local.written import WrittenReplies

# ChatML, for a GGUF that carries no template of its own.
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise RuntimeError(
            "the llama backend needs llama-cpp-python: run `make serve-local` (it installs it) "
            "or `pip install -e '.[llama]'`"
        ) from exc
    return llama_cpp


def amx_warning(system_info: str) -> str | None:
    """What to tell a user whose llama-cpp-python carries llama.cpp's AMX kernels (``make``
    builds it without them: on some machines that report AMX the first matrix product faults)."""
    if "AMX_INT8 = 1" not in system_info:
        return None
    return (
        "this llama-cpp-python was built with llama.cpp's AMX kernels, which end the process "
        "with a segmentation fault on some machines; if the first request does, install the "
        "build `make` makes without them: rm .venv/.installed-llama && make serve-local"
    )


def llama_vocabulary(llm: Any) -> Any:
    """A loaded llama.cpp model's vocabulary as an ``llguidance.LLTokenizer``, every
    end-of-generation token counted as its end (a call grammar allows them once it accepts)."""
    llama_cpp = _import_llama()
    from llguidance.llamacpp import lltokenizer_from_vocab

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    eog = [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]
    return lltokenizer_from_vocab(vocab, eos_token=eog)


def control_texts(llm: Any) -> tuple[str, ...]:
    """The text of every control or user-defined token of a loaded model's vocabulary."""
    llama_cpp = _import_llama()
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    kinds = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    texts = (
        llm._model.token_get_text(t)
        for t in range(llm.n_vocab())
        if llama_cpp.llama_vocab_get_attr(vocab, t) & kinds
    )
    return tuple(t for t in texts if t)


class LlamaBackend(LocalBackend):
    name = "llama"

    def __init__(
        self,
        model: ResolvedModel,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        reuse_prefix: bool = True,
        tool_grammar: Mode = "lazy",
        draft: DraftSettings | None = None,
        slots: int = 1,
        kv_unified: bool = False,
    ):
        super().__init__(model, n_ctx, n_threads, tool_grammar)
        self.reuse_prefix = reuse_prefix
        self.slots = slots
        self.kv_unified = kv_unified
        self._engine: SlotEngine | None = None
        self.draft = draft or DraftSettings()
        self._draft_counts: DraftCounts | None = None
        self._llm: Any = None
        self._vocab_is_eog: Any = None
        self._add_bos = False

    @property
    def engine(self) -> SlotEngine | None:
        """The slot engine (``--slots`` above 1, once loaded); None with one slot."""
        return self._engine

    @property
    def ready(self) -> bool:
        # load_seconds is set last, once the call grammar is built too: no request may be
        # served unconstrained while it is still being built.
        return self._llm is not None and self.load_seconds is not None

    def load(self) -> None:
        llama_cpp = _import_llama()
        started = time.perf_counter()
        warning = amx_warning(llama_cpp.llama_print_system_info().decode(errors="replace"))
        if warning:
            logging.getLogger("serve_local").warning(warning)
        self._sha256 = self.model.sha256
        llm = llama_cpp.Llama(
            model_path=str(self.model.path),
            # With slots, requests are decoded in the engine's own context; this one only
            # tokenizes, so it is kept small.
            n_ctx=self.limits.n_ctx if self.slots == 1 else 512,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            verbose=False,
        )
        meta = llm.metadata
        self._add_bos = meta.get("tokenizer.ggml.add_bos_token", "false") == "true"
        self._template = ChatTemplate(
            meta.get("tokenizer.chat_template") or CHATML,
            bos_token=llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else "",
            eos_token=llm._model.token_get_text(llm.token_eos()) if llm.token_eos() >= 0 else "",
        )
        self._vocab_is_eog = llama_cpp.llama_vocab_is_eog
        self._markers = control_texts(llm)
        self._random_seed = int(llama_cpp.LLAMA_DEFAULT_SEED)  # llama.cpp draws a fresh one
        if self.draft.on:
            self._draft_counts = enable_prompt_lookup(llm, self.draft)
        if self.slots > 1:
            self._engine = SlotEngine(
                llm,
                self.slots,
                self.limits.n_ctx,
                self.n_threads,
                self._is_eog,
                reuse_prefix=self.reuse_prefix,
                unified=self.kv_unified,
            )
        self._llm = llm
        self._load_call_grammar()
        self.load_seconds = time.perf_counter() - started

    def describe(self) -> dict[str, Any]:
        slots = {"slots": self.slots, "kv_unified": self.kv_unified} if self.slots > 1 else {}
        return {"prefix_cache": self.reuse_prefix, **self.draft.describe(), **slots}

    def _is_eog(self, token: int) -> bool:
        """End of generation: EOS, or any end-of-turn token of the model's vocabulary."""
        return bool(self._vocab_is_eog(self._llm._model.vocab, token))

    def _vocabulary(self) -> Any:
        return llama_vocabulary(self._llm)

    def _tokens(self, text: str, markup: bool = True, first: bool = True) -> list[int]:
        tokens: list[int] = self._llm.tokenize(
            text.encode("utf-8"), add_bos=self._add_bos and first, special=markup
        )
        return tokens

    def _generate(
        self,
        tokens: list[int],
        max_new: int,
        sampling: Sampling,
        cancel: threading.Event,
        on_text: Callable[[str], None] | None = None,
        constraint: CallConstraint | None = None,
    ) -> Generated:
        if self._engine is not None:
            return self._engine.generate(tokens, max_new, sampling, cancel, on_text, constraint)
        llm = self._llm
        if not self.reuse_prefix:
            llm.reset()  # forget the KV cache: every prompt token is evaluated again
        # llama-cpp-python reuses the longest common prefix of the KV cache (one token less
        # when the whole prompt matches, to refresh the logits); report what it reuses.
        cached = common_prefix(list(llm._input_ids[: llm.n_tokens]), tokens)
        cache_n = cached - 1 if cached == len(tokens) else cached
        # The seed stays set on the Llama object: a request without one must not sample with
        # the seed of the request before it.
        llm.set_seed(self._random_seed if sampling.seed is None else sampling.seed)
        reply = ReplyText(
            lambda out: bytes(llm.detokenize(out)), max_new, sampling, cancel, on_text, constraint
        )
        yielded = 0  # tokens generate gave, the end-of-generation one included
        counts = self._draft_counts
        if counts is not None:
            counts.reset()
        start = time.perf_counter()
        first: float | None = None
        for token in llm.generate(
            tokens,
            temp=sampling.temperature,
            top_p=sampling.top_p,
            top_k=0 if sampling.temperature > 0 else 1,
            min_p=0.0,
            repeat_penalty=sampling.repetition_penalty,
            frequency_penalty=sampling.frequency_penalty,
            presence_penalty=sampling.presence_penalty,
            logits_processor=None if constraint is None else [_masker(constraint)],
        ):
            first = first or time.perf_counter()
            yielded += 1
            if reply.add(token, self._is_eog(token)):
                break
        reply.flush()
        text, finish, matched, out = reply.text, reply.finish, reply.stop_sequence, reply.tokens
        end = time.perf_counter()
        first = first or end
        return Generated(
            text=text,
            finish_reason=finish,
            prompt_n=len(tokens) - max(cache_n, 0),
            cache_n=max(cache_n, 0),
            predicted_n=len(out),
            prompt_ms=(first - start) * 1000,
            predicted_ms=(end - first) * 1000,
            stop_sequence=matched,
            draft_n=None if counts is None else counts.drafted,
            draft_n_accepted=None if counts is None else counts.accepted(yielded),
        )


def _masker(constraint: CallConstraint) -> Callable[[Any, Any], Any]:
    """A llama-cpp-python logits processor: tokens the call grammar forbids get -inf."""

    def mask(_: Any, scores: Any) -> Any:
        allowed = constraint.allowed()
        if allowed is not None:
            scores[~allowed[: len(scores)]] = -np.inf
        return scores

    return mask


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    Option(
        "--no-prefix-cache",
        "evaluate every prompt from scratch (for comparisons)",
        False,
        switch=True,
    ),
    Option(
        "--draft",
        "'prompt-lookup' drafts tokens by finding the reply's last words earlier in the context "
        "and verifies them in one batch (speculative decoding; make bench BENCH_PARTS=draft "
        "measures it)",
        "off",
        choices=DRAFT_MODES,
        env="DRAFT",
    ),
    Option("--draft-tokens", "tokens per draft", 10, type=_at_least_one),
    Option("--draft-ngram", "longest n-gram looked up", 2, type=_at_least_one),
    Option(
        "--slots",
        "requests decoded together, each in its own sequence of --ctx tokens (1: one after "
        "another; make bench BENCH_PARTS=slots measures 1, 2, 4 and 8)",
        1,
        type=_at_least_one,
        env="SLOTS",
    ),
    Option(
        "--kv-unified",
        "with --slots: one KV buffer that every sequence attends over, instead of a stream "
        "per sequence",
        False,
        switch=True,
    ),
)


def from_args(args: argparse.Namespace) -> LlamaBackend:
    """``--backend llama``: a GGUF file, with its prefix cache, tool grammar and draft."""
    model = check_weights(resolve(args.model))
    if model.kind != "gguf":
        raise ModelUnavailable(
            f"the llama backend needs a GGUF file; {model.path} is a {model.kind}. "
            "Use --backend transformers for a Hugging Face folder."
        )
    if args.slots > 1 and args.draft != "off":
        raise ModelUnavailable(
            "--draft works with one slot only: drafted tokens are verified one request at a time"
        )
    backend = LlamaBackend(
        model,
        n_ctx=args.ctx,
        n_threads=args.threads,
        reuse_prefix=not args.no_prefix_cache,
        tool_grammar=args.tool_grammar,
        draft=DraftSettings(args.draft, args.draft_tokens, args.draft_ngram),
        slots=args.slots,
        kv_unified=args.kv_unified,
    )
    if args.written_replies:
        backend.written = WrittenReplies()
    return backend
