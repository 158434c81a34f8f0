"""The transformers backend with the real packaged SmolLM2 (a GGUF, dequantized on load)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from serve_local.backends.llama import LlamaBackend
from serve_local.backends.transformers import TransformersBackend
from serve_local.models import SMOLLM2, resolve
from tests.helpers import post
from tests.models_fixtures import assert_tool_text_stays_text, model_server

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List files.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


@pytest.fixture
def hf(smol_transformers: tuple[TransformersBackend, str]) -> str:
    return smol_transformers[1]


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def test_models_entry(hf: str) -> None:
    (entry,) = httpx.get(f"{hf}/models").json()["data"]
    assert (entry["id"], entry["backend"], entry["device"]) == (SMOLLM2, "transformers", "cpu")
    assert entry["sha256"] == resolve(SMOLLM2).sha256


def test_greedy_output_is_byte_identical(hf: str) -> None:
    first = post(hf, body("Name three colors.", max_tokens=20)).json()
    second = post(hf, body("Name three colors.", max_tokens=20)).json()
    assert first["choices"] == second["choices"]
    assert first["usage"] == second["usage"]
    assert first["timings"]["cache_n"] == 0


def test_max_tokens_and_context_errors_behave_as_on_llama(hf: str) -> None:
    reply = post(hf, body("Tell me a long story.", max_tokens=3)).json()
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 3
    too_long = post(hf, body("word " * 3000))
    assert too_long.status_code == 400
    assert too_long.json()["error"]["code"] == "context_length_exceeded"


def test_same_prompt_tokens_as_the_llama_backend(hf: str) -> None:
    """Same template, same tokenizer: usage is comparable request for request."""
    request = body("Which file is the largest?", tools=TOOLS, max_tokens=4)
    hf_usage = post(hf, request).json()["usage"]
    with model_server(LlamaBackend(resolve(SMOLLM2), n_ctx=1024)) as llama:
        llama_usage = post(llama, request).json()["usage"]
    assert hf_usage["prompt_tokens"] == llama_usage["prompt_tokens"]


def test_a_stop_sequence_ends_generation_where_it_appears(hf: str) -> None:
    """Generation stops at the token that completes the stop sequence: completion_tokens
    counts up to that token, no further."""
    prompt = "Describe the sea in one sentence."
    full = post(hf, body(prompt, max_tokens=40)).json()
    text = full["choices"][0]["message"]["content"]
    stop = text[10:14]
    cut = post(hf, body(prompt, max_tokens=40, stop=[stop])).json()
    assert cut["choices"][0]["message"]["content"] == text[: text.index(stop)]
    assert cut["choices"][0]["finish_reason"] == "stop"
    used = cut["usage"]["completion_tokens"]
    assert used < full["usage"]["completion_tokens"]
    # Greedy: the first n tokens of the reply are what max_tokens=n returns.
    before = post(hf, body(prompt, max_tokens=used - 1)).json()["choices"][0]["message"]
    upto = post(hf, body(prompt, max_tokens=used)).json()["choices"][0]["message"]
    assert stop not in before["content"] and stop in upto["content"]


def test_a_tool_result_cannot_open_a_turn_of_its_own(
    smol_transformers: tuple[TransformersBackend, str],
) -> None:
    assert_tool_text_stays_text(*smol_transformers)
