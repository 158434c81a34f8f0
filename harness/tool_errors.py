"""How a tool's failure is worded for the model, and which failures end the run."""

from __future__ import annotations

from typing import Literal

from harness.errors import ToolError

ToolErrorPolicy = Literal["fatal", "generic", "descriptive"]
TOOL_ERROR_POLICIES: tuple[ToolErrorPolicy, ...] = ("fatal", "generic", "descriptive")

GENERIC_ERROR = "Error: the tool call failed."


def error_text(error: ToolError, wording: ToolErrorPolicy, hints: bool = True) -> str:
    """What the model reads in place of a result. ``fatal`` never reaches the model. The
    error's hint, when it has one, follows its message unless ``hints`` is off."""
    if wording == "generic":
        return GENERIC_ERROR
    if hints and error.hint:
        return f"Error: {error} Hint: {error.hint}"
    return f"Error: {error}"


def rejection_text(reason: str) -> str:
    """A declined call still gets a result, in words: silence reads as success."""
    reason = reason.strip()
    if reason:
        return f"Not run: the user declined this call. Their reason: {reason}"
    return "Not run: the user declined this call and gave no reason. Nothing was changed."
