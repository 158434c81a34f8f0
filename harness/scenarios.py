"""The task each scripted scenario is written for, so ``--scenario NAME`` is one flag."""

from __future__ import annotations

TIMEOUT_TASK = "Which file mentions a timeout?"

SCENARIO_TASKS: dict[str, str] = {
    "plan": TIMEOUT_TASK,
    "runaway": TIMEOUT_TASK,
    "recover": TIMEOUT_TASK,
    "duplicate": TIMEOUT_TASK,
    "denied": "What does the system's password file say?",
    "destructive": "Free up some space in the workspace.",
    "slow": "Scan the log archive and tell me what you find.",
    "oracle": "Which file is the largest?",
    "malformed": "Clean up the database.",
    "research": "Find out which file mentions a timeout.",
    "mixed": "Tidy the workspace and tell me what notes.txt says.",
    "double_delete": "Delete access.log now, and again after the logger writes a new one.",
    "silent": TIMEOUT_TASK,
    "mute": TIMEOUT_TASK,
    "submitter": "How many files are there?",
}
