"""What a BFCL run's records show, counted: for a multi-turn run, how the conversations failed
(BFCL's checker's error types), the calls that repeat the call just before, and the user turns
answered without a call (prose only, or nothing at all); for a single-turn run, the replies'
shapes (a call, several calls, a code fence, call-shaped JSON left as text, the length cap)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from evals.markdown import table
from evals.record.bfcl import ItemRecord

Item = ItemRecord
_FENCE = "```"
_CALL_TEXT = re.compile(r'\{\s*"name"\s*:')


def _calls(step: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, args) for call in step.get("calls") or [] for name, args in call.items()]


def conversation(items: Sequence[Item]) -> dict[str, Any]:
    """A multi-turn run's conversations, counted."""
    calls = repeats = turns = with_call = prose = empty = 0
    for item in items:
        previous: tuple[str, str] | None = None
        for turn in item.turns or []:
            turns += 1
            steps = turn.get("steps") or []
            made = [c for step in steps for c in _calls(step)]
            for call in made:
                calls += 1
                repeats += call == previous
                previous = call
            if made:
                with_call += 1
            elif any((step.get("text") or "").strip() for step in steps):
                prose += 1
            else:
                empty += 1
    return {
        "conversations": len(items),
        "passed": sum(i.valid for i in items),
        "failures": Counter(
            str(i.error_type or "?").removeprefix("multi_turn:") for i in items if not i.valid
        ),
        "calls": calls,
        "repeats": repeats,
        "user_turns": turns,
        "turns_with_call": with_call,
        "prose_only": prose,
        "empty": empty,
        "force_quit": sum(bool(i.force_quit) for i in items),
    }


def conversations_table(runs: Sequence[tuple[str, Sequence[Item]]]) -> str:
    """One row per multi-turn run."""
    rows = []
    for name, items in runs:
        c = conversation(items)
        failures = "; ".join(f"{k.replace('_', ' ')}: {n}" for k, n in c["failures"].most_common())
        rows.append(
            [
                name,
                f"{c['passed']}/{c['conversations']}",
                failures or "–",
                f"{c['repeats']} of {c['calls']}",
                c["user_turns"],
                c["turns_with_call"],
                c["prose_only"],
                c["empty"],
                c["force_quit"],
            ]
        )
    head = ["run", "passed", "why the others failed (BFCL's checker)",
            "calls repeating the call before", "user turns", "with a call", "prose only",
            "nothing", "force-quit"]  # fmt: skip
    return table(head, rows)


def replies(items: Sequence[Item]) -> dict[str, int]:
    """A single-turn run's replies, by shape."""
    text = [i.content or "" for i in items]
    return {
        "items": len(items),
        "with_call": sum(bool(i.calls) for i in items),
        "several_calls": sum(len(i.calls) > 1 for i in items),
        "fenced": sum(_FENCE in t for t in text),
        "call_text": sum(bool(_CALL_TEXT.search(t)) for t in text),
        "cap": sum(i.finish_reason == "length" for i in items),
        "schema": sum(any(i.schema_problems) for i in items),
        "errors": sum(bool(i.request_error) for i in items),
    }


def replies_table(runs: Sequence[tuple[str, Sequence[Item]]]) -> str:
    """One row per single-turn run."""
    rows = []
    for name, items in runs:
        r = replies(items)
        rows.append(
            [name, r["items"], r["with_call"], r["several_calls"], r["fenced"], r["call_text"],
             r["cap"], r["schema"], r["errors"]]
        )  # fmt: skip
    head = ["run", "items", "replies with a call", "with several", "text with a code fence",
            "call-shaped JSON left as text", "at the length cap", "a call failing its schema",
            "request errors"]  # fmt: skip
    return table(head, rows)


def agreement(a: Sequence[Item], b: Sequence[Item]) -> dict[str, int]:
    """Two runs on the same items: how many both asked, with the same verdict, with the same
    calls (names and arguments, in order)."""
    by_id = {i.id: i for i in b}
    both = [(i, by_id[i.id]) for i in a if i.id in by_id]

    def calls(item: Item) -> list[tuple[str, str]]:
        return [(c.function, c.arguments) for c in item.calls]

    return {
        "items": len(both),
        "same_verdict": sum(x.valid == y.valid for x, y in both),
        "same_calls": sum(calls(x) == calls(y) for x, y in both),
    }
