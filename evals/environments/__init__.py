"""What a task runs on: a workspace of files, or a database. Each environment is one module
with one object (``base.Environment``): which tasks it holds, what it opens once per eval,
the tools and system-prompt intro a task runs with, the fields it adds to the task's record,
the policy its tasks run under by default, and the scripted reading of everything a task
could look at (what the scorer's strategies answer from). ``registry.py`` lists them, one
line each."""

from evals.environments.base import Dialogue, Environment, Opened, Reading
from evals.environments.registry import (
    ENVIRONMENTS,
    environment_of,
    environment_of_record,
    held_by,
    tool_names,
)

__all__ = [
    "ENVIRONMENTS",
    "Dialogue",
    "Environment",
    "Opened",
    "Reading",
    "environment_of",
    "environment_of_record",
    "held_by",
    "tool_names",
]
