"""The harness's errors.

HarnessError
├── ToolError        a tool failed; its text goes back to the model as the tool result
│   ├── PathRefused  a path outside the workspace or unusable; permanent, no retry can fix it
│   ├── InvalidArguments  arguments the tool's JSON Schema refuses; permanent, the tool never ran
│   ├── Declined     a person declined the call; permanent, the tool never ran
│   ├── Repeated     a repeat of a call that failed, answered with that failure
│   └── ToolBug      a tool raised something else: a bug in the tool, still read by the model
├── ProviderError    the model server failed or answered with an error status
│   └── KeyRefused   it refused the key (401, 403): no run can go on; the caller's work ends
├── ToolServerFailed a tool's server (an MCP server) would not start, died, hung or broke the
│                    protocol: the machinery failed, and the run ends as an error
├── NotPending       approve/reject named a call that is not waiting (harness.approvals)
└── StateFileError   a saved run cannot be loaded; names the file (harness.persist)
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""


class ToolError(HarnessError):
    """A failure meant for the model to read. ``permanent`` means retrying cannot help."""

    permanent = False

    def __init__(
        self, message: str, *, permanent: bool | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message)
        if permanent is not None:
            self.permanent = permanent
        # What the tool knows that would help the model act (the columns that do exist, say),
        # kept apart from the message: the ``error_hints`` setting decides whether it is read.
        self.hint = hint


class PathRefused(ToolError):
    permanent = True


class InvalidArguments(ToolError):
    """Arguments the tool's own schema refuses: the model reads why and may call again with
    others. Permanent: the same arguments will always be refused."""

    permanent = True


class Declined(ToolError):
    """A person declined the call; the model reads their decision, and the call never ran."""

    permanent = True


class Repeated(ToolError):
    """A call identical to an earlier one that failed, answered with that failure again: a
    copy of a failure is still a failure."""


class ToolBug(ToolError):
    """A tool raised an exception other than ToolError; the run records it as a bug.

    The model still reads that the call failed, so one broken tool cannot end a run that the
    tool-error policy would let go on.
    """

    def __init__(self, tool_name: str, exc: Exception) -> None:
        super().__init__(
            f"the tool {tool_name} failed unexpectedly ({exc.__class__.__name__}: {exc})"
        )


class ToolServerFailed(HarnessError):
    """The server behind a tool failed: it would not start or initialize, exited, did not answer
    within the tool timeout, or answered outside the protocol. Not the model's doing, so it is
    never a result the model reads: the run stops, and an eval counts it as an error."""


class ProviderError(HarnessError):
    """The provider could not be reached or answered with an error status.

    ``retryable`` errors (429, 5xx, connection failures) are retried with backoff; the others
    (400, 401, 403, 404, a reply that is not a chat completion) end the run at once.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
        unavailable: bool | None = None,
        context_overflow: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        # The request's prompt does not fit the model's context (an OpenAI-shaped
        # ``context_length_exceeded``, llama-server's ``exceed_context_size_error``).
        self.context_overflow = context_overflow
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        # The machinery failed, not the model: the server could not be reached or answered
        # 429 or 5xx (still so once the retries gave up). A run it ends is an error, not an
        # answer.
        self.unavailable = retryable if unavailable is None else unavailable


class KeyRefused(ProviderError):
    """The endpoint refused the request's key (HTTP 401 or 403), or wanted one and got none.
    No run can go on without a key it takes, so this is never a run's outcome: it ends the
    eval, once, with a message naming the endpoint and the variable the key came from."""
