"""Conformance: the official openai client talks to our server as it would to OpenAI's."""

from __future__ import annotations

import json

import openai
import pytest

from harness.tools import default_tools


def test_official_client_gets_tool_calls_from_plan(scripted_url: str) -> None:
    client = openai.OpenAI(base_url=scripted_url, api_key="unused")
    completion = client.chat.completions.create(
        model="scripted:plan",
        messages=[{"role": "user", "content": "Which file mentions a timeout?"}],
        tools=[t.spec() for t in default_tools()],  # type: ignore[misc]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.id == "c1" and call.function.name == "list_files"
    assert json.loads(call.function.arguments) == {}
    assert completion.usage is not None and completion.usage.prompt_tokens > 0


def test_official_client_streams(scripted_url: str) -> None:
    client = openai.OpenAI(base_url=scripted_url, api_key="unused")
    stream = client.chat.completions.create(
        model="scripted:plan",
        messages=[{"role": "user", "content": "Which file mentions a timeout?"}],
        tools=[t.spec() for t in default_tools()],  # type: ignore[misc]
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    names = [
        tc.function.name
        for c in chunks
        for ch in c.choices
        for tc in ch.delta.tool_calls or []
        if tc.function
    ]
    assert names == ["list_files"]


def test_official_client_raises_bad_request_for_empty_messages(scripted_url: str) -> None:
    client = openai.OpenAI(base_url=scripted_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="scripted:plan", messages=[])
    assert "at least one message" in str(caught.value)


def test_official_client_raises_not_found_for_unknown_scenario(scripted_url: str) -> None:
    client = openai.OpenAI(base_url=scripted_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="scripted:missing", messages=[{"role": "user", "content": "hi"}]
        )
