"""Wire types of the chat completions subset we serve (pydantic: this is the HTTP boundary)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Wire(BaseModel):
    # Clients send fields we do not use (logprobs, user, metadata, ...); ignore them.
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Wire):
    name: str
    arguments: str


class ToolCall(_Wire):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Wire):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    refusal: str | None = None

    def text(self) -> str:
        """The message's text; list content is joined from its text parts."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")


class FunctionSpec(_Wire):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(_Wire):
    type: Literal["function"]
    function: FunctionSpec


class StreamOptions(_Wire):
    include_usage: bool = False


class ChatRequest(_Wire):
    model: str = Field(min_length=1)
    messages: list[Message]
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    # Not OpenAI's: vLLM's name and llama.cpp's for the multiplicative penalty (1.0 = none).
    repetition_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    repeat_penalty: float | None = Field(default=None, gt=0.0, le=10.0)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    parallel_tool_calls: bool | None = None
    n: int | None = None

    @field_validator("messages")
    @classmethod
    def _not_empty(cls, value: list[Message]) -> list[Message]:
        if not value:
            raise ValueError("messages must hold at least one message")
        return value


class Usage(_Wire):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Timings(_Wire):
    """Per-response timings in llama.cpp server's vocabulary."""

    prompt_n: int = 0
    cache_n: int = 0
    prompt_ms: float = 0.0
    predicted_n: int = 0
    predicted_ms: float = 0.0
    queue_ms: float = 0.0
    # Speculative decoding (--draft), as llama-server names them; absent when it is off.
    draft_n: int | None = None
    draft_n_accepted: int | None = None
