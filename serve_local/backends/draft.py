"""Speculative decoding drafted from the prompt (prompt lookup), on the llama backend.

In a tool loop a reply often copies text the model has just been shown: a file name from a
listing, a line of a file, the JSON of an earlier call. llama-cpp-python's
``LlamaPromptLookupDecoding`` finds the last ``ngram`` tokens earlier in the context and
proposes the ``tokens`` that followed them; ``Llama.generate`` evaluates the proposal in one
batch and keeps the longest prefix the model itself would have sampled, so greedy replies are
the model's own (whether they are *identical* to one-token-at-a-time decoding is measured in
``make bench`` part ``draft``: a batch may sum in another order).

Two things differ from passing the draft to ``Llama(draft_model=...)``:

- Logits are computed for every position of a *verification* batch only. llama-cpp-python
  switches ``logits_all`` on for the whole context when given a draft model, which computes
  (and copies) a vocabulary-wide row for every prompt token: for Qwen's 152k vocabulary that is
  600 KB a token and about a fifth more work per prompt, paid on every turn of an agent loop.
- It counts what it drafted and what was kept, reported per reply as llama-server does
  (``timings.draft_n``, ``timings.draft_n_accepted``).

The call grammar is unaffected: ``generate`` samples each drafted position in order, through
the same logits processor, after the previous token was observed, so a drafted token the grammar
forbids is masked like a sampled one and the draft is cut there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

DraftMode = Literal["off", "prompt-lookup"]
DRAFT_MODES: tuple[DraftMode, ...] = ("off", "prompt-lookup")


@dataclass(frozen=True)
class DraftSettings:
    mode: DraftMode = "off"
    tokens: int = 10  # tokens proposed per draft (num_pred_tokens)
    ngram: int = 2  # longest n-gram looked up in the context (max_ngram_size)

    def __post_init__(self) -> None:
        if self.mode not in DRAFT_MODES:
            raise ValueError(f"draft mode {self.mode!r}: expected one of {', '.join(DRAFT_MODES)}")
        if self.tokens < 1 or self.ngram < 1:
            raise ValueError("--draft-tokens and --draft-ngram must be at least 1")

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def describe(self) -> dict[str, Any]:
        """The fields ``/v1/models`` and every record carry."""
        if not self.on:
            return {"draft": "off"}
        return {"draft": self.mode, "draft_tokens": self.tokens, "draft_ngram": self.ngram}


class DraftCounts:
    """What one reply drafted and kept. ``generate`` evaluates the prompt once, then one
    verification batch per step: the token just sampled followed by its draft. Every batch
    yields the token sampled at its first position plus each drafted token the model agreed
    with, so the drafted tokens kept are the tokens yielded, less the prompt's one, less one
    per verification batch (exact also when the reply stops inside a batch)."""

    def __init__(self) -> None:
        self.evals = 0
        self.drafted = 0

    def reset(self) -> None:
        self.evals = 0
        self.drafted = 0

    def accepted(self, yielded: int) -> int:
        return max(0, yielded - 1 - max(0, self.evals - 1))


def enable_prompt_lookup(llm: Any, settings: DraftSettings) -> DraftCounts:
    """Give a loaded ``llama_cpp.Llama`` (built without a draft model) prompt-lookup drafts."""
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    needed = ("_batch", "_ctx", "input_ids", "n_tokens", "n_batch", "_requires_eval")
    missing = [name for name in needed if not hasattr(llm, name)]
    if missing:
        raise RuntimeError(
            "--draft prompt-lookup needs llama-cpp-python's Llama internals "
            f"({', '.join(missing)} not found in this version); start with --draft off"
        )
    counts = DraftCounts()

    def evaluate(tokens: list[int]) -> None:
        # Llama.eval, except that only a verification batch (any eval after a reply's first,
        # the prompt) asks for logits at every position, and no logits are copied out: the
        # sampler reads them from the context.
        verify = counts.evals > 0
        counts.evals += 1
        if verify:
            counts.drafted += max(0, len(tokens) - 1)
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        for i in range(0, len(tokens), llm.n_batch):
            batch = tokens[i : i + llm.n_batch]
            n_past = llm.n_tokens
            llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=verify)
            llm._ctx.decode(llm._batch)
            llm.input_ids[n_past : n_past + len(batch)] = batch
            llm.n_tokens += len(batch)
            llm._requires_eval = False

    llm.eval = evaluate
    llm.draft_model = LlamaPromptLookupDecoding(
        max_ngram_size=settings.ngram, num_pred_tokens=settings.tokens
    )
    return counts
