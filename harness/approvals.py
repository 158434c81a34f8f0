"""A person's decision on a call that needs approval, recorded in the run state."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.state import RunState, pending


class NotPending(HarnessError):
    """The call id is not among the calls waiting for an answer."""


def _check_pending(state: RunState, call_id: str) -> None:
    waiting = [c.get("id") for c in pending(state)]
    if call_id not in waiting:
        listed = ", ".join(str(c) for c in waiting) or "none"
        raise NotPending(
            f"call {call_id!r} is not pending in run {state.run_id} (pending: {listed})"
        )


def approve(state: RunState, call_id: str) -> None:
    """Allow the call to run when the loop resumes."""
    _check_pending(state, call_id)
    state.approved.append(call_id)


def reject(state: RunState, call_id: str, reason: str = "") -> None:
    """Decline the call; the loop writes the decision, in words, where the model reads it."""
    _check_pending(state, call_id)
    state.rejected[call_id] = reason
