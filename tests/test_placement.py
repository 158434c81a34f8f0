"""Which sequence of the batched engine a request takes (``serve_local.backends.placement``):
a conversation goes on in its own, and one that only starts alike never takes another's."""

from __future__ import annotations

from serve_local.backends.placement import MIN_COPY_GAIN, choose, common_prefix

SYSTEM = list(range(1000, 1600))  # the system prompt and tools every conversation opens with


def test_a_conversation_goes_on_in_the_sequence_that_holds_it() -> None:
    a_last = [*SYSTEM, 1, 2, 3]  # the agent's last prompt, cached with its reply after it
    a_next = [*a_last, 7, 8, 9, 10]
    shares = [common_prefix([*a_last, 5, 6], a_next), 0, 0]
    assert choose(shares, [len(a_last), 0, 0], [1, 0, 0], [0, 1, 2]) == (0, None, len(a_last))


def test_a_new_conversation_that_starts_alike_copies_the_prefix_into_a_sequence_of_its_own() -> (
    None
):
    """Sequence 0 holds conversation A, between its turns; B opens with the same system
    prompt. B takes the empty sequence and copies the shared prefix from A's, which A keeps."""
    a_cached = [*SYSTEM, 1, 2, 3, 4]
    b_first = [*SYSTEM, 9, 9]
    shares = [common_prefix(a_cached, b_first), 0, 0, 0]
    seq, source, keep = choose(shares, [len(a_cached) - 2, 0, 0, 0], [3, 0, 0, 0], [0, 1, 2, 3])
    assert (seq, source, keep) == (1, 0, len(SYSTEM))


def test_with_no_empty_sequence_the_one_used_longest_ago_is_taken() -> None:
    """A and its user in 0 and 1 (used last), C's old talk in 2 (used first): B opens alike
    and takes 2."""
    b_first = [*SYSTEM, 5]
    cached = [[*SYSTEM, 1, 1], [2, 2, 2], [*SYSTEM, 3, 3]]
    shares = [common_prefix(c, b_first) for c in cached]
    seq, source, keep = choose(shares, [601, 3, 601], [5, 6, 2], [0, 1, 2])
    assert (seq, source, keep) == (2, None, len(SYSTEM))  # it holds the prefix: nothing copied


def test_an_agent_and_its_user_each_keep_a_sequence() -> None:
    agent, user = [*SYSTEM, 1], [77, 78, 79]
    prompts, used, cached = [0, 0], [0, 0], [[], []]
    turns = [agent, user, [*agent, 2, 3], [*user, 80, 81], [*agent, 2, 3, 4, 5]]
    went = []
    for n, tokens in enumerate(turns, start=1):
        shares = [common_prefix(c, tokens) for c in cached]
        seq, _, _ = choose(shares, prompts, used, [0, 1])
        cached[seq], prompts[seq], used[seq] = tokens, len(tokens), n
        went.append(seq)
    assert went == [0, 1, 0, 1, 0]


def test_a_copy_must_save_enough_to_be_made() -> None:
    shares = [MIN_COPY_GAIN - 1, 0]
    assert choose(shares, [50, 0], [1, 0], [1]) == (1, None, 0)
    shares = [MIN_COPY_GAIN, 0]
    assert choose(shares, [50, 0], [1, 0], [1]) == (1, 0, MIN_COPY_GAIN)
