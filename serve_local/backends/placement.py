"""Which of the engine's sequences a new request takes (``serve_local.backends.slots``): the
one that holds its conversation, else the one used longest ago, with the longest shared prefix
any sequence holds copied in. A pure choice over token counts, so it is tested apart from
llama.cpp."""

from __future__ import annotations

# A copied prefix must save at least this many tokens over what the target already holds:
# copying a whole KV stream costs about what evaluating a few tokens does.
MIN_COPY_GAIN = 16


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def choose(
    shares: list[int], prompts: list[int], used: list[int], free: list[int]
) -> tuple[int, int | None, int]:
    """Where a prompt goes: (sequence, sequence to copy from or None, tokens kept), given how
    many tokens of it each sequence's cache shares, the length of the prompt each sequence
    last took (0: none, or its cache was dropped), when each was last given a request, and the
    free ones.

    A free sequence whose last prompt the new one extends whole holds this conversation: it
    goes on there. Otherwise the new prompt takes the free sequence used longest ago (an empty
    one first: ``used`` 0), never the cache of another conversation that only starts alike
    (an agent's, between its turns, sharing the same system prompt), and the longest shared
    prefix any sequence holds is copied into it when that saves :data:`MIN_COPY_GAIN` tokens."""
    own = [s for s in free if prompts[s] and shares[s] >= prompts[s]]
    seq = max(own, key=lambda s: shares[s]) if own else min(free, key=lambda s: used[s])
    keep = shares[seq]
    best = max(range(len(shares)), key=lambda s: shares[s])
    source = best if shares[best] >= keep + MIN_COPY_GAIN else None
    return seq, source, shares[best] if source is not None else keep
