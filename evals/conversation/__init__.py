"""A task run as a conversation: our agent loop on one side, a simulated user on the other.

The user opens; the agent (``harness.loop.run_loop``, every control of the loop applying: caps,
budgets, timeouts, the tool-error policy, approvals, the trace) works with its tools until it
answers in words; the user reads that and replies; and so on until the user ends it (one of
τ²'s stop words), the agent's loop stops, or a cap is reached. Why it ended is typed
(:class:`End`, each mapped to τ²'s termination reason), never read back from the transcript.

``ends``: the words, the ends and the rules either side reads; ``user``: the user's side
(:class:`ModelUser`, :class:`ScriptedUser`); ``talk``: the conversation held to its end
(:func:`converse`), counted as τ²'s orchestrator counts it, and the scripted agents. What the
environment must follow of the talk (τ²'s trajectory) it hears through ``heard``.
"""

from evals.conversation.ends import (
    GREETING,
    OUT_OF_SCOPE,
    STOP,
    TRANSFER,
    End,
    Rules,
    empty,
    unreadable,
    user_end,
)
from evals.conversation.talk import (
    AGENTS,
    CLOSING,
    IDLE_WORDS,
    Agent,
    AskedAgain,
    Heard,
    StopWhen,
    Talk,
    converse,
    scripted_agent,
)
from evals.conversation.user import (
    GUIDELINES,
    USER_TOOL_ROUNDS,
    Asked,
    Capped,
    ModelUser,
    ScriptedUser,
    User,
    UserCall,
    UserEmpty,
    UserFailed,
)

__all__ = [
    "AGENTS",
    "CLOSING",
    "GREETING",
    "GUIDELINES",
    "IDLE_WORDS",
    "OUT_OF_SCOPE",
    "STOP",
    "TRANSFER",
    "USER_TOOL_ROUNDS",
    "Agent",
    "Asked",
    "AskedAgain",
    "Capped",
    "End",
    "Heard",
    "ModelUser",
    "Rules",
    "ScriptedUser",
    "StopWhen",
    "Talk",
    "User",
    "UserCall",
    "UserEmpty",
    "UserFailed",
    "converse",
    "empty",
    "scripted_agent",
    "unreadable",
    "user_end",
]
