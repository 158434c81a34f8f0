"""A person's decision on a call that needs approval, recorded in the run state.

The person names the call by the id the run shows; the decision is stored under the call's
position (``Call.key``), so it can never cover another call that reuses the id.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.state import Call, RunState, pending


class NotPending(HarnessError):
    """The call id is not among the calls waiting for an answer."""


def _pending_call(state: RunState, call_id: str) -> Call:
    waiting = pending(state)
    for call in waiting:
        if call.id == call_id:
            return call
    listed = ", ".join(c.id for c in waiting) or "none"
    raise NotPending(f"call {call_id!r} is not pending in run {state.run_id} (pending: {listed})")


def approve(state: RunState, call_id: str) -> None:
    """Allow the call to run when the loop resumes."""
    state.approved.append(_pending_call(state, call_id).key)


def reject(state: RunState, call_id: str, reason: str = "") -> None:
    """Decline the call; the loop writes the decision, in words, where the model reads it."""
    state.rejected[_pending_call(state, call_id).key] = reason
