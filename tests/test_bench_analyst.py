"""The analyst bench's cache figures from turn timings as llama.cpp reports them."""

from __future__ import annotations

from types import SimpleNamespace

from lab.studies.serving.analyst_turns import _carried, _lowest, _shares


def _record(*timings: dict[str, int], task: str = "q") -> SimpleNamespace:
    return SimpleNamespace(turn_timings=list(timings), task_id=task)


def test_the_share_counts_new_tokens_and_the_carried_figure_does_not() -> None:
    first = {"prompt_n": 300, "cache_n": 0, "predicted_n": 20}
    # The second turn found the whole first turn (prompt and reply) in the cache and evaluated
    # 100 new tokens, the tool result: 320 of 420 of its prompt, all of what came before.
    kept = {"prompt_n": 100, "cache_n": 320, "predicted_n": 10}
    # A reply re-rendered in the template's form: only the prompt before it was found.
    rerendered = {"prompt_n": 120, "cache_n": 300, "predicted_n": 10}
    shares = _shares([_record(first, kept), _record(first, rerendered)])
    assert shares[1] == [0.0, 0.0]
    assert shares[2] == [320 / 420, 300 / 420]
    carried = _carried([_record(first, kept), _record(first, rerendered), _record(first, {})])
    assert carried == {2: [1.0, 300 / 320]}  # a turn without timings says nothing
    # The lowest turn from the second on, and what it would be were all before it cached.
    third = {"prompt_n": 20, "cache_n": 430, "predicted_n": 5}
    low = _lowest([_record(first, kept, third, task="a"), _record(first, rerendered, task="b")])
    assert low == {"task": "b", "turn": 2, "share": 300 / 420, "ceiling": 320 / 420,
                   "new_tokens": 100}  # fmt: skip
    low = _lowest([_record(first, kept, third, task="a")])
    assert low is not None and low["share"] == low["ceiling"] == 320 / 420  # all carried


def _figures(low: float, correct: int = 1) -> dict[str, object]:
    return {
        "correct": correct, "questions": 6, "turns": [3] * 6, "wall_ms": [1000.0] * 6,
        "median_wall_ms": 1000.0, "parallel_turns": 0,
        "reuse_by_turn": {"1": 0.9, "2": low}, "min_reuse_after_first": low,
        "carried_by_turn": {"2": 1.0}, "min_carried": 1.0,
        "reply_tokens": 10, "reply_tokens_reused": 10,
    }  # fmt: skip


def test_the_target_is_judged_on_the_chapters_loop_and_with_the_schema_shown() -> None:
    from lab.studies.serving.analyst_turns import render

    old = {"questions": 6, "parallel on": _figures(0.838), "parallel off": _figures(0.84)}
    text = "\n".join(render(old))  # a report from before the schema was shown still renders
    assert "(parallel on): 83.8 %, falls short" in text
    assert "(schema shown)" not in text
    new = {**old, "schema shown": _figures(0.93, correct=4)}
    text = "\n".join(render(new))
    assert "(parallel on): 83.8 %, falls short" in text
    assert "(schema shown): 93.0 %, pass" in text
    assert "| correct | 1/6 | 1/6 | 4/6 |" in text
