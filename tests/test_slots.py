"""Several conversations decoded at once by one llama.cpp model (``--slots``), through the
real server: each request keeps its own grammar, its own cache and its own text; a cancelled
or refused request leaves the others running; a new conversation starts from a prefix
another one has evaluated; the eval keeps the server full."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from evals.record import read_runs
from evals.run.discovery import discover
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving, in_flight
from evals.run.settings import eval_loop
from harness.tools import default_tools
from serve_local.backends.llama import LlamaBackend
from serve_local.backends.reply import Sampling
from serve_local.backends.slots import SlotEngine
from serve_local.models import QWEN_CODER, resolve
from serve_local.schema import ChatRequest
from tests.helpers import post
from tests.models_fixtures import model_server

SLOTS = 4
TOOLS = [t.spec() for t in default_tools()]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, LlamaBackend]]:
    backend = LlamaBackend(resolve(QWEN_CODER), n_ctx=2048, slots=SLOTS)
    with model_server(backend) as url:
        yield url, backend


def engine_of(backend: LlamaBackend) -> SlotEngine:
    assert backend.engine is not None
    return backend.engine


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 300) -> None:
    """Block until ``condition`` holds (observable state, polled); fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def at_once(
    engine: SlotEngine, calls: list[Callable[[], Any]], queued: int | None = None
) -> list[Any]:
    """Run ``calls`` in threads, admitted together: the engine holds them until all are queued
    (``queued`` of them reach the engine; the rest are refused before it)."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc

    engine.pause()
    before = engine.waiting
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    try:
        for thread in threads:
            thread.start()
        wanted = before + (len(calls) if queued is None else queued)
        wait_for(lambda: engine.waiting >= wanted, "the requests to queue")
    finally:
        engine.resume()
    for thread in threads:
        thread.join(timeout=600)
    return results


def chat(url: str, text: str, system: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]
    response = post(url, {"model": "m", "messages": messages, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_models_names_the_slots_and_the_eval_keeps_them_full(
    served: tuple[str, LlamaBackend],
) -> None:
    url, _ = served
    (entry,) = httpx.get(f"{url}/models").json()["data"]
    assert entry["slots"] == SLOTS and entry["context_length"] == 2048
    (server,) = discover([url])
    assert server.slots == SLOTS
    assert in_flight(None, [server]) == SLOTS  # no --concurrency: as many as the slots
    assert in_flight(2, [server]) == 2  # as told


def test_each_sequence_keeps_its_own_call_grammar(served: tuple[str, LlamaBackend]) -> None:
    """Two conversations in one batch, one forced to call read_file, one told to call none."""
    url, backend = served
    engine = engine_of(backend)
    forced = {"type": "function", "function": {"name": "read_file"}}
    question = "What does notes.txt say?"
    replies = at_once(
        engine,
        [
            lambda: chat(url, question, tools=TOOLS, tool_choice=forced, max_tokens=60),
            lambda: chat(url, question, tools=TOOLS, tool_choice="none", max_tokens=40),
        ],
    )
    assert engine.peak >= 2
    called, talked = (r["choices"][0] for r in replies)
    (call,) = called["message"]["tool_calls"]
    assert call["function"]["name"] == "read_file"
    assert isinstance(json.loads(call["function"]["arguments"])["path"], str)
    assert called["finish_reason"] == "tool_calls"
    assert not talked["message"].get("tool_calls")
    assert talked["message"]["content"] and talked["finish_reason"] in ("stop", "length")


WORDS = ("walnut", "trombone", "glacier", "pepperoni")


def saying(url: str, word: str) -> Callable[[], dict[str, Any]]:
    prompt = f"Repeat this word exactly once and nothing else: {word}"
    return lambda: chat(url, prompt, max_tokens=12)


def test_no_reply_carries_another_conversations_text(served: tuple[str, LlamaBackend]) -> None:
    url, backend = served
    engine = engine_of(backend)
    replies = at_once(engine, [saying(url, w) for w in WORDS])
    texts = [r["choices"][0]["message"]["content"].lower() for r in replies]
    for word, text in zip(WORDS, texts, strict=True):
        assert word in text, (word, text)
        assert not [w for w in WORDS if w != word and w in text], (word, text)


def test_a_cancelled_request_frees_its_slot(served: tuple[str, LlamaBackend]) -> None:
    url, backend = served
    engine = engine_of(backend)
    cancelled = engine.finished["cancelled"]
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Count from 1 to 400, one number per line."}],
        "max_tokens": 1500,
        "stream": True,
    }
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=300) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"content"' in line:
                break  # the reply is being generated: leave
    wait_for(lambda: engine.in_flight == 0, "the cancelled request to leave its slot", 120)
    assert engine.finished["cancelled"] == cancelled + 1
    # Every slot serves again.
    replies = at_once(engine, [saying(url, w) for w in WORDS])
    assert all(r["choices"][0]["message"]["content"] for r in replies)


def test_a_refused_request_leaves_the_others_running(served: tuple[str, LlamaBackend]) -> None:
    url, backend = served
    engine = engine_of(backend)
    too_long = "word " * 3000  # more than the 2,048 tokens of a sequence
    replies = at_once(
        engine,
        [
            lambda: post(
                url,
                {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 24},
            ),
            lambda: post(url, {"model": "m", "messages": [{"role": "user", "content": too_long}]}),
            lambda: post(url, "{not json"),
            lambda: post(url, {"model": "m", "messages": [{"role": "tool", "content": "x"}]}),
        ],
        queued=1,
    )
    ok, long, broken, bad_tool = replies
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"]
    assert long.status_code == 400
    assert long.json()["error"]["code"] == "context_length_exceeded"
    assert broken.status_code == 400 and broken.json()["error"]["message"]
    assert bad_tool.status_code == 400 and bad_tool.json()["error"]["message"]


class Broken:
    """A call grammar that fails on its first token: a fault inside one sequence."""

    def allowed(self) -> np.ndarray[Any, Any] | None:
        raise RuntimeError("the grammar broke")

    def observe(self, token: int, text: str) -> bool:
        return False


def test_a_fault_in_one_sequence_fails_that_request_only(
    served: tuple[str, LlamaBackend],
) -> None:
    _, backend = served
    engine = engine_of(backend)
    request = {"model": "m", "messages": [{"role": "user", "content": "Name a colour."}]}
    tokens = backend.prompt_tokens(ChatRequest.model_validate(request))
    fine, broken = at_once(
        engine,
        [
            lambda: engine.generate(tokens, 8, Sampling(), threading.Event()),
            lambda: engine.generate(tokens, 8, Sampling(), threading.Event(), None, Broken()),  # type: ignore[arg-type]
        ],
    )
    assert isinstance(broken, RuntimeError) and "grammar broke" in str(broken)
    assert fine.predicted_n > 0 and fine.text
    assert engine.in_flight == 0


def test_a_new_conversation_starts_from_a_prefix_another_evaluated(
    served: tuple[str, LlamaBackend],
) -> None:
    """While one conversation generates, a second with the same system prompt and tools
    arrives: its first turn copies the prefix and evaluates only its own question."""
    url, backend = served
    engine = engine_of(backend)
    system = "You answer questions about the files of a small workspace. Session 7f3a9. " + (
        "Answer in plain words, briefly, and say only what the files show. " * 6
    )
    copied = engine.copied
    first_chunk = threading.Event()
    long_reply: dict[str, Any] = {}

    def generate_long() -> None:
        body = {
            "model": "m",
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "Count from 1 to 100, one per line."}],
            "max_tokens": 300, "stream": True,
        }  # fmt: skip
        text = []
        with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=300) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    delta = json.loads(line[6:])["choices"]
                    if delta and delta[0]["delta"].get("content"):
                        text.append(delta[0]["delta"]["content"])
                        first_chunk.set()
        long_reply["text"] = "".join(text)

    thread = threading.Thread(target=generate_long)
    thread.start()
    assert first_chunk.wait(300)  # its prompt is in the cache
    second = chat(url, "Which word comes after 'walnut' here: walnut glacier?", system=system,
                  max_tokens=10)  # fmt: skip
    thread.join(timeout=600)
    timings = second["timings"]
    prompt = timings["prompt_n"] + timings["cache_n"]
    assert engine.copied == copied + 1
    # Everything up to the question was reused: only the question's own tokens were evaluated.
    assert timings["cache_n"] > 0.8 * prompt and timings["prompt_n"] < 40, timings
    assert "walnut" not in long_reply["text"] and "100" in long_reply["text"]


def test_the_six_tasks_run_four_at_a_time(served: tuple[str, LlamaBackend], tmp_path: Path) -> None:
    """``make serve-local SLOTS=4 && make eval``: no --concurrency, four task runs in flight,
    every task run recorded with the slots that served it."""
    url, backend = served
    engine = engine_of(backend)
    engine.peak = 0
    decoded, decode_s = engine.decoded, engine.decode_s
    out = tmp_path / "run.jsonl"
    settings = EvalSettings(serving=Serving(base_url=url), out=out, loop=eval_loop(max_turns=2))
    lines: list[str] = []
    asyncio.run(run_eval(settings, echo=lines.append))
    records = read_runs(out)
    assert len(records) == 6 and not [r for r in records if r.status == "error"]
    assert {r.spec.slots for r in records} == {SLOTS}
    assert engine.peak == SLOTS
    assert f"{SLOTS} task runs in flight" in lines
    # The engine's counters hold the tokens the turns say were evaluated or generated, give or
    # take one a turn (a reply's last token is not put through the model), and the time taken.
    said = sum(t["prompt_n"] + t["predicted_n"] for r in records for t in r.turn_timings if t)
    turns = sum(r.turns for r in records)
    assert said - turns <= engine.decoded - decoded <= said + turns
    assert engine.decode_s > decode_s


def test_a_unified_cache_gives_each_sequence_its_own_text() -> None:
    """``--kv-unified``: one buffer every sequence attends over; a copied prefix is cells
    shared, not data copied, and no sequence reads another's tokens."""
    backend = LlamaBackend(resolve(QWEN_CODER), n_ctx=1024, slots=2, kv_unified=True)
    backend.load()
    engine = engine_of(backend)
    try:
        system = "You repeat words. " * 20

        def tokens(word: str) -> list[int]:
            request = {
                "model": "m",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": f"Repeat this word exactly once: {word}"},
                ],
            }
            return backend.prompt_tokens(ChatRequest.model_validate(request))

        first = engine.generate(tokens("walnut"), 8, Sampling(), threading.Event())
        copied = engine.copied
        # The first sequence holds the shared prefix; both new requests start from it.
        a, b = at_once(
            engine,
            [
                lambda: engine.generate(tokens("glacier"), 8, Sampling(), threading.Event()),
                lambda: engine.generate(tokens("trombone"), 8, Sampling(), threading.Event()),
            ],
        )
        assert "walnut" in first.text.lower()
        assert "glacier" in a.text.lower() and "trombone" not in a.text.lower()
        assert "trombone" in b.text.lower() and "glacier" not in b.text.lower()
        assert engine.copied == copied + 1  # the sequence not holding the prefix copied it
        assert min(a.cache_n, b.cache_n) > 60
    finally:
        engine.close()


def test_two_conversations_taking_turns_each_keep_their_prefix(
    served: tuple[str, LlamaBackend],
) -> None:
    """An agent and its simulated user take turns on one server: neither's request lands on
    the sequence holding the other's prefix, so each turn reads only its own new tokens (a
    tie went to the first free sequence, and each evicted the other every turn)."""
    url, _ = served
    agent = "You are a booking agent. Policy 41c: " + "Check the id, then act. " * 20
    user = "You play a customer with reservation QX7. " + "Speak briefly, one line. " * 20
    turns = []
    for n in range(2):
        for system in (agent, user):
            reply = chat(url, f"Turn {n}: say ok.", system=system, max_tokens=2)
            turns.append(reply["timings"])
    later = turns[2:]  # each side's second turn: its own prefix is still cached
    assert all(t["cache_n"] > 0.8 * (t["cache_n"] + t["prompt_n"]) for t in later), turns
