"""Going on with an interrupted eval: the attempts of a task killed in flight kept apart, and
a resume refused when the records it keeps were made with another setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.record import RunRecord, RunSpec
from harness.persist import state_path


def set_aside_attempt(keep: Path, run_id: str) -> int | None:
    """A task run that was in flight when its eval was killed left a state file and a trace;
    they are kept as ``RUN_ID.attempt-N.*`` so the next attempt starts files of its own.
    Returns N, or None when there was no earlier attempt."""
    trace, state = keep / f"{run_id}.trace.jsonl", state_path(keep, run_id)
    if not trace.exists() and not state.exists():
        return None
    n = 1
    while (keep / f"{run_id}.attempt-{n}.trace.jsonl").exists() or (
        keep / f"{run_id}.attempt-{n}.json"
    ).exists():
        n += 1
    for path, kept in (
        (trace, f"{run_id}.attempt-{n}.trace.jsonl"),
        (state, f"{run_id}.attempt-{n}.json"),
    ):
        if path.exists():
            path.replace(keep / kept)
    return n


# What a resumed eval's server and loop must have as its kept records had, or the run file
# would mix answers of two setups under one label: (record field, what it is).
SAME_ON_RESUME = (
    ("model_sha256", "weights (sha256)"),
    ("tool_grammar", "tool grammar"),
    ("draft", "draft"),
    ("preset", "preset"),
    ("solver", "solver"),
)


def refuse_changed_setup(out: Path, kept: list[RunRecord], spec: RunSpec) -> None:
    """An :class:`EvalError` naming both values when the records being resumed were made with
    other weights, another tool grammar, draft or preset than this run would use."""
    context = spec.model_dump(mode="json")
    for record in kept:
        had = record.spec.model_dump(mode="json")
        for key, what in SAME_ON_RESUME:
            if had[key] != context[key]:
                raise EvalError(
                    f"cannot resume {out.name}: its records were made with {what} "
                    f"{_shown(had[key], context[key])}, and this run would use "
                    f"{_shown(context[key], had[key])}; "
                    "serve what the records were made with, or start a new run"
                )


def _shown(value: Any, other: Any) -> str:
    """A recorded value as the refusal names it; a preset by its name, and by the settings
    that differ when the names agree."""
    if isinstance(value, dict) and isinstance(other, dict) and "name" in value:
        settings, theirs = value.get("settings") or {}, other.get("settings") or {}
        changed = {k: settings.get(k) for k in settings.keys() | theirs.keys()}
        changed = {k: v for k, v in changed.items() if v != theirs.get(k)}
        if value.get("name") == other.get("name") and changed:
            return (
                f"{value['name']!r} ({', '.join(f'{k}={v}' for k, v in sorted(changed.items()))})"
            )
        return repr(value.get("name"))
    return "none" if value is None else repr(value)
