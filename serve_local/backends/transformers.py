"""The transformers backend (torch): a Hugging Face folder, or a GGUF dequantized on load.

Same template rendering, tool-call parsing, limits and reply shape as the llama backend, so the
two compare request for request. It keeps no KV cache between requests: every turn evaluates
the whole prompt (``cache_n`` is 0), which is what plain ``generate`` does.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from typing import Any

from serve_local.backends.generation import Generated, LocalBackend
from serve_local.backends.llama import CHATML
from serve_local.backends.options import MODEL_OPTIONS, Option
from serve_local.backends.reply import Sampling, cut_at_stop
from serve_local.chat_template import ChatTemplate
from serve_local.errors import StartupError
from serve_local.models import ResolvedModel, check_weights, resolve
from serve_local.toolgrammar import CallConstraint, Mode
from serve_local.written import WrittenReplies


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise StartupError(
            "the transformers backend needs torch and transformers: run "
            "`make serve-local BACKEND=transformers` (it installs them) or "
            "`pip install torch==2.13.0 && pip install -e '.[transformers]'`"
        ) from exc
    return torch


class TransformersBackend(LocalBackend):
    name = "transformers"

    def __init__(
        self,
        model: ResolvedModel,
        n_ctx: int = 4096,
        device: str = "cpu",
        n_threads: int | None = None,
        tool_grammar: Mode = "lazy",
    ) -> None:
        torch = _import_torch()
        if device == "cuda" and not torch.cuda.is_available():
            raise StartupError("--device cuda was asked for, but torch sees no CUDA device here")
        super().__init__(model, n_ctx, n_threads, tool_grammar)
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def ready(self) -> bool:
        # load_seconds is set last, once the call grammar is built too: no request may be
        # served unconstrained while it is still being built.
        return self._model is not None and self.load_seconds is not None

    def load(self) -> None:
        torch = _import_torch()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        started = time.perf_counter()
        self._sha256 = self.model.sha256
        torch.set_num_threads(self.n_threads)
        if self.model.kind == "gguf":
            where, extra = str(self.model.path.parent), {"gguf_file": self.model.path.name}
        else:
            where, extra = str(self.model.path), {}
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
        placement = {"device_map": "auto"} if self.device == "auto" else {}
        model: Any = AutoModelForCausalLM.from_pretrained(
            where, dtype=torch.float32, **placement, **extra
        )
        if self.device != "auto":
            model = model.to(self.device)
        model.eval()
        self._eog = {
            t
            for t in [tokenizer.eos_token_id, *_as_list(model.generation_config.eos_token_id)]
            if t is not None
        }
        im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
            self._eog.add(im_end)
        self._template = ChatTemplate(
            tokenizer.chat_template or CHATML,
            bos_token=tokenizer.bos_token or "",
            eos_token=tokenizer.eos_token or "",
        )
        self._markers = tuple(t.content for t in tokenizer.added_tokens_decoder.values())
        self._tokenizer = tokenizer
        self._model = model
        self._load_call_grammar()
        self.load_seconds = time.perf_counter() - started

    def describe(self) -> dict[str, Any]:
        return {"device": self.device}

    def _vocabulary(self) -> Any:
        from llguidance.hf import from_tokenizer

        n_vocab = self._model.get_output_embeddings().weight.shape[0]
        return from_tokenizer(self._tokenizer, n_vocab=n_vocab, eos_token=sorted(self._eog))

    def _tokens(self, text: str, markup: bool = True, first: bool = True) -> list[int]:
        tokens: list[int] = self._tokenizer(
            text, add_special_tokens=False, split_special_tokens=not markup
        )["input_ids"]
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
        """One ``generate`` call; a streaming client gets the text in one piece at the end."""
        torch = _import_torch()
        from transformers import (
            LogitsProcessor,
            LogitsProcessorList,
            StoppingCriteria,
            StoppingCriteriaList,
        )

        first: list[float] = []
        ended: list[bool] = []  # the call grammar or a stop sequence ended the reply
        tokenizer, prompt_len = self._tokenizer, len(tokens)

        class _Watch(StoppingCriteria):
            """Notes when the first token exists; feeds the call grammar; stops when the client
            has gone, a constrained call has ended the reply or a stop sequence appeared (so no
            token past it is generated, counted or waited for)."""

            def __call__(self, input_ids: Any, scores: Any, **_: Any) -> Any:
                if not first:
                    first.append(time.perf_counter())
                if (constraint is not None or sampling.stop) and not ended:
                    new = input_ids[0, prompt_len:].tolist()
                    text = tokenizer.decode(new, skip_special_tokens=False)
                    stopped = cut_at_stop(text, sampling.stop)[1] is not None
                    if stopped or (
                        constraint is not None
                        and new[-1] not in self_eog
                        and constraint.observe(new[-1], text)
                    ):
                        ended.append(True)
                done = cancel.is_set() or bool(ended)
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

        class _Mask(LogitsProcessor):
            def __call__(self, input_ids: Any, scores: Any) -> Any:
                assert constraint is not None
                allowed = constraint.allowed()
                if allowed is None:
                    return scores
                keep = torch.from_numpy(allowed[: scores.shape[-1]]).to(scores.device)
                return scores.masked_fill(~keep, float("-inf"))

        self_eog = self._eog

        device = next(self._model.parameters()).device
        input_ids = torch.tensor([tokens], device=device)
        sample = sampling.temperature > 0
        if sample and sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        start = time.perf_counter()
        with torch.inference_mode():
            output = self._model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new,
                do_sample=sample,
                temperature=sampling.temperature if sample else None,
                top_p=sampling.top_p if sample else None,
                top_k=None,
                repetition_penalty=sampling.repetition_penalty,
                eos_token_id=sorted(self._eog),
                pad_token_id=self._tokenizer.pad_token_id or min(self._eog),
                stopping_criteria=StoppingCriteriaList([_Watch()]),
                logits_processor=LogitsProcessorList([_Mask()] if constraint else []),
            )
        end = time.perf_counter()
        new = output[0][len(tokens) :].tolist()
        finish = "length"
        if new and new[-1] in self._eog:
            new, finish = new[:-1], "stop"
        elif ended:
            finish = "stop"
        elif cancel.is_set():
            finish = "cancelled"
        text = self._tokenizer.decode(new, skip_special_tokens=False)
        matched = None
        if sampling.stop:
            text, matched = cut_at_stop(text, sampling.stop)
            finish = "stop" if matched is not None else finish
        first_at = first[0] if first else end
        if on_text is not None and text:
            on_text(text)
        return Generated(
            text=text,
            finish_reason=finish,
            prompt_n=len(tokens),
            cache_n=0,
            predicted_n=len(new),
            prompt_ms=(first_at - start) * 1000,
            predicted_ms=(end - first_at) * 1000,
            stop_sequence=matched,
        )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


OPTIONS: tuple[Option, ...] = (
    *MODEL_OPTIONS,
    Option("--device", "where the model runs", "cpu", choices=("cpu", "cuda", "auto")),
)


def from_args(args: argparse.Namespace) -> TransformersBackend:
    """``--backend transformers``: a Hugging Face folder or a GGUF, one token at a time
    (speculative decoding, ``--draft``, is the llama backend's)."""
    backend = TransformersBackend(
        check_weights(resolve(args.model)),
        n_ctx=args.ctx,
        device=args.device,
        n_threads=args.threads,
        tool_grammar=args.tool_grammar,
    )
    if args.written_replies:
        backend.written = WrittenReplies()
    return backend
