"""τ²'s runner's defaults, and the settings of a run that differ from them: one owner for what
a run's header prints and what every table a run feeds states beside its figures."""

from __future__ import annotations

from collections.abc import Mapping

# τ²'s runner's defaults (tau2.config): a conversation's steps and failed calls, the seed its
# epochs' seeds are drawn from (τ² calls an epoch a trial); its agent and user sample at
# temperature 0 (greedy, ours when no temperature is given) and have no other cap.
TAU2_MAX_STEPS, TAU2_MAX_ERRORS, TAU2_SEED = 200, 10, 300


def said(loop: Mapping[str, object]) -> list[str]:
    """The settings a τ² run is held under (a record's ``spec.loop``), each that differs from
    τ²'s runner's said so. A run made before the conversation followed τ²'s rules (no
    ``max_steps`` in its record) had no step or error cap and seeded by epoch."""

    def vs(value: object, theirs: object, name: str) -> str:
        return name if value == theirs else f"{name} (tau2's: {theirs})"

    temperature, user_temperature = loop.get("temperature"), loop.get("user_temperature")
    user_turns = loop.get("max_user_turns")
    sampled = (
        "greedy" if temperature in (None, 0, 0.0) else f"temperature {temperature} (tau2's: 0)"
    )
    if user_temperature not in (None, 0, 0.0):
        sampled += f", the user at {user_temperature} (tau2's: 0)"
    # τ²'s seed rule, its seed named where the run's is another (or none)
    seed = loop.get("seed")
    other = "" if seed == TAU2_SEED else f"{TAU2_SEED}, "
    theirs = f"tau2's: {other}one per epoch, shared by every task and side"
    unused = "; unused when greedy" if sampled == "greedy" else ""
    if "max_steps" not in loop:
        before = "no step or error cap (tau2's: 200 steps, 10 errors)"
        seeds = "no seed" if seed is None else f"one seed per epoch from {seed}"
        return [before, sampled, f"{seeds} ({theirs}{unused})", *_caps(loop)]
    out = [
        vs(loop["max_steps"], TAU2_MAX_STEPS, f"{loop['max_steps']} steps"),
        vs(loop.get("max_errors"), TAU2_MAX_ERRORS, f"{loop.get('max_errors')} errors"),
        "no cap on the user's messages" if user_turns is None
        else f"{user_turns} user messages (tau2's: no cap)",
        sampled,
    ]  # fmt: skip
    if loop.get("seeds") == "tau2":
        out.append(f"seed {seed}: one seed per task, epoch and side ({theirs}{unused})")
    else:
        out.append(f"seeds by epoch from {seed} ({theirs})")
    return out + _caps(loop, user_turns_said=True)


def _caps(loop: Mapping[str, object], user_turns_said: bool = False) -> list[str]:
    """The caps of our loop that τ²'s runner does not have (keys as ``LoopConfig`` names
    them, as a record's ``spec.loop`` keeps them)."""
    out = []
    if loop.get("max_user_turns") is not None and not user_turns_said:
        out.append(f"{loop['max_user_turns']} user messages (tau2's: no cap)")
    if loop.get("max_turns") is not None:
        out.append(f"{loop['max_turns']} agent turns (tau2's: no cap)")
    if loop.get("max_budget_usd") is not None:
        out.append(f"a budget of ${loop['max_budget_usd']} (tau2's: none)")
    if loop.get("max_total_tokens") is not None:
        out.append(f"{loop['max_total_tokens']} tokens a run (tau2's: no cap)")
    if loop.get("timeout_s") is not None:
        out.append(f"a time limit of {loop['timeout_s']} s (tau2's: none)")
    return out


def differs(loop: Mapping[str, object]) -> list[str]:
    """Only the settings that differ from τ²'s runner's (the seed rule included)."""
    return [s for s in said(loop) if "tau2's" in s]
