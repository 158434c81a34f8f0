"""BFCL's multi-turn categories through the agent loop, judged by BFCL's own multi-turn
checker: the ground truth replayed scores every entry, a model that never calls none."""

from __future__ import annotations

import ast
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from evals.bfcl.bridge import Checker, bfcl_python
from evals.bfcl.items import MULTI_TURN
from evals.bfcl.multi import Entry
from evals.bfcl.run import BfclSettings, run_bfcl
from evals.errors import EvalError
from evals.report.bfcl import summarize_bfcl_run
from evals.run.servers import Serving
from serve_local.inprocess import running_server
from tests.helpers import flat_items

needs_bfcl = pytest.mark.skipif(
    not bfcl_python().exists(),
    reason=f"BFCL's virtualenv is absent ({bfcl_python()}): `make bfcl-venv` creates it",
)
Message = dict[str, Any]


# One checker for the module (starting one imports all of bfcl-eval); every run is given it.
in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def checker() -> AsyncIterator[Checker]:
    async with Checker() as started:
        yield started


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def entries(checker: Checker) -> dict[str, Entry]:
    loaded = await checker.load_multi(list(MULTI_TURN))
    return {e["id"]: Entry.from_checker(e) for e in loaded["entries"]}


def _tool_call(entry: Entry, text: str, n: int, offered: list[dict[str, Any]]) -> dict[str, Any]:
    """A ground-truth call (``mv(source='a', destination='b')``) as the tool call a model
    would make, positional arguments named after the function's parameters."""
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    tool = next(t for t in offered if entry.names[t["function"]["name"]] == node.func.id)
    order = list(tool["function"]["parameters"].get("properties", {}))
    args = {order[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    call = {"name": tool["function"]["name"], "arguments": json.dumps(args)}
    return {"id": f"call_{n}", "type": "function", "function": call}


def _server(
    entries: dict[str, Entry], answer: Callable[[Entry, int, Message, list[Any]], Message]
) -> AbstractContextManager[str]:
    """An OpenAI-shaped server that knows the entries of one category (by the user turns so
    far) and answers each request with ``answer(entry, turn, last message, tools offered)``."""

    def asked(e: Entry, messages: list[Message]) -> bool:
        said = [m["content"] for m in messages if m["role"] == "user"]
        # One user message a turn; a held-back turn's (BFCL's own words) matches any.
        wanted = [turn[-1]["content"] if turn else None for turn in e.turns]
        return len(said) <= len(wanted) and all(
            w is None or w == x for w, x in zip(wanted, said, strict=False)
        )

    async def models(_: Request) -> JSONResponse:
        entry = {"id": "bfcl-multi", "object": "model", "owned_by": "tests", "sha256": "0" * 64,
                 "backend": "scripted-bfcl", "tool_grammar": "lazy"}  # fmt: skip
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        messages, tools = body["messages"], body.get("tools", [])
        (entry,) = {e.id: e for e in entries.values() if asked(e, messages)}.values()
        turn = sum(m["role"] == "user" for m in messages) - 1
        message = answer(entry, turn, messages[-1], tools)
        finish = message.pop("_finish", None) or (
            "tool_calls" if message.get("tool_calls") else "stop"
        )
        return JSONResponse(
            {
                "id": "chatcmpl-multi",
                "object": "chat.completion",
                "model": "bfcl-multi",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
        )

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    return running_server(Starlette(routes=routes))  # type: ignore[arg-type]


def oracle(entry: Entry, turn: int, last: Message, tools: list[Any]) -> Message:
    """Each turn's ground-truth calls in one reply, then a word to end the turn."""
    truth = (entry.ground_truth or [])[turn]
    if last["role"] != "user" or not truth:
        return {"role": "assistant", "content": "Done."}
    calls = [_tool_call(entry, text, n, tools) for n, text in enumerate(truth)]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def silent(entry: Entry, turn: int, last: Message, tools: list[Any]) -> Message:
    return {"role": "assistant", "content": "I cannot do that."}


def rambling(entry: Entry, turn: int, last: Message, tools: list[Any]) -> Message:
    """Prose cut at the length limit, never a call."""
    return {"role": "assistant", "content": "Let me think about this step by", "_finish": "length"}


def _summary(out: Path) -> dict[str, Any]:
    return json.loads(out.with_name(out.stem + ".summary.json").read_text())


@needs_bfcl
@pytest.mark.slow
@in_module_loop
async def test_the_ground_truth_replayed_scores_every_entry_and_silence_none(
    checker: Checker, entries: dict[str, Entry], tmp_path: Path
) -> None:
    records = []
    for category in MULTI_TURN:
        mine = {k: e for k, e in entries.items() if e.category == category}
        with _server(mine, oracle) as url:
            # A run file's name is the user's: spaces and brackets must not reach BFCL's code.
            out = tmp_path / f"oracle {category} (2).jsonl"
            settings = BfclSettings(
                serving=Serving(base_url=url), categories=(category,), limit=2, seed=3, out=out
            )
            await run_bfcl(
                settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
            )
        assert _summary(out)["categories"][category]["correct"] == 2
        records += flat_items(out)
    assert len(records) == 2 * len(MULTI_TURN)
    wrong = [(r["id"], r["error_type"], r["errors"][:1]) for r in records if not r["valid"]]
    assert wrong == []
    for r in records:
        entry = entries[r["id"]]
        assert len(r["turns"]) == len(entry.turns) and r["force_quit"] is False
        # Every ground-truth call of the turn was made and answered by BFCL's backends.
        for turn, truth in zip(r["turns"], entry.ground_truth or [], strict=True):
            made = [c for s in turn["steps"] for c in s["calls"]]
            assert len(made) == len(truth)
            assert sum(len(s["results"]) for s in turn["steps"]) == len(truth)
            # ... and ran: BFCL's code never failed on the conversation's own name.
            failed = [x for s in turn["steps"] for x in s["results"] if "during execution" in x]
            assert failed == [], failed
        assert r["turns"][0]["state"], "the backends' state after the first turn"
        runs = tmp_path / f"oracle {r['category']} (2).runs"
        assert (runs / f"{r['id']}.trace.jsonl").exists()
    held = [r for r in records if r["category"] == "multi_turn_miss_func"]
    assert all(entries[r["id"]].held for r in held)

    base = {k: e for k, e in entries.items() if e.category == "multi_turn_base"}
    with _server(base, silent) as url:
        out = tmp_path / "silent.jsonl"
        settings = BfclSettings(
            serving=Serving(base_url=url), categories=("multi_turn_base",), limit=3, out=out
        )
        await run_bfcl(settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run)
    records = flat_items(out)
    assert len(records) == 3
    assert not any(r["valid"] for r in records)
    assert {r["error_type"] for r in records} == {"multi_turn:empty_turn_model_response"}


def test_multi_turn_and_single_turn_categories_run_apart() -> None:
    with pytest.raises(EvalError, match="run simple_python apart from multi_turn_base"):
        BfclSettings(
            serving=Serving(base_url="http://x"), categories=("simple_python", "multi_turn_base")
        ).check()
    with pytest.raises(EvalError, match="multi-turn categories only"):
        BfclSettings(
            serving=Serving(base_url="http://x"), categories=("simple_python",), preset="focused"
        ).check()
    # Where the items go is checked with the rest: BFCL asks in the openai shape only.
    with pytest.raises(EvalError, match="openai shape only"):
        BfclSettings(serving=Serving("http://x", api="anthropic")).check()
    with pytest.raises(EvalError, match="--concurrency must be at least 1"):
        BfclSettings(serving=Serving("http://x", concurrency=0)).check()


@needs_bfcl
@in_module_loop
async def test_an_interrupted_multi_turn_run_resumes_with_the_conversations_left(
    checker: Checker, entries: dict[str, Entry], tmp_path: Path
) -> None:
    from evals.bfcl.run import resumed_settings

    base = {k: e for k, e in entries.items() if e.category == "multi_turn_base"}
    with _server(base, oracle) as url:
        out = tmp_path / "run.jsonl"
        settings = BfclSettings(
            serving=Serving(base_url=url),
            categories=("multi_turn_base",),
            limit=2,
            preset="focused",
            out=out,
        )
        await run_bfcl(settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run)
        before = flat_items(out)
        partial = tmp_path / "cut.jsonl.partial"
        partial.write_text(out.read_text().splitlines(keepends=True)[0])
        resumed = resumed_settings(partial, base_url=url)
        assert resumed.preset == "focused" and resumed.categories == ("multi_turn_base",)
        done = await run_bfcl(
            resumed, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
        )
    after = flat_items(done)
    assert [r["id"] for r in after] == [r["id"] for r in before]
    assert after[0] == before[0] and all(r["valid"] for r in after)
    assert {r["preset"] for r in after} == {"focused"}
    # Exported to Inspect like any other run: a sample per conversation with its transcript.
    from inspect_ai.log import read_eval_log

    from evals.report.inspect_log import export

    (log_file,) = export([done], tmp_path / "logs")
    log = read_eval_log(str(log_file))
    assert log.samples is not None and [s.id for s in log.samples] == [r["id"] for r in after]
    # The second conversation ran under this run file's name: its state is beside it.
    sample = log.samples[1]
    assert sample.scores is not None and sample.scores["bfcl"].value == "C"
    roles = [m.role for m in sample.messages]
    assert roles[0] == "user" and "tool" in roles and "system" not in roles
    assert sum(r == "user" for r in roles) == len(base[after[1]["id"]].turns)


@needs_bfcl
@in_module_loop
async def test_a_reply_cut_without_a_call_ends_the_turn_as_in_bfcl(
    checker: Checker, entries: dict[str, Entry], tmp_path: Path
) -> None:
    """BFCL's inference ends a user turn on a reply with no call, cut or not; the loop does not
    ask the model to finish it (which would spend the turn's steps on one cut reply)."""
    base = {k: e for k, e in entries.items() if e.category == "multi_turn_base"}
    with _server(base, rambling) as url:
        out = tmp_path / "cut.jsonl"
        settings = BfclSettings(
            serving=Serving(base_url=url), categories=("multi_turn_base",), limit=1, out=out
        )
        await run_bfcl(settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run)
    (record,) = flat_items(out)
    assert record["request_error"] is None and not record["valid"]
    assert record["model_calls"] == len(record["turns"]) == len(base[record["id"]].turns)
    assert all(len(t["steps"]) == 1 for t in record["turns"])


# --- Nothing a model writes is evaluated as code (hardening) ----------------------------------


def _payload(marker: Path) -> str:
    """Python that writes ``marker``: what BFCL's ``eval`` would run were it pasted in."""
    return f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"


def _hostile(
    key_marker: Path, name_marker: Path
) -> Callable[[Entry, int, Message, list[Any]], Message]:
    """First reply: a call of an offered function with its required arguments and one more key
    that is code, and a call of a function never offered whose name is code; then "Done."."""

    def answer(entry: Entry, turn: int, last: Message, tools: list[Any]) -> Message:
        if last["role"] != "user" or turn > 0:
            return {"role": "assistant", "content": "Done."}
        tool = next(
            t for t in tools
            if all(
                (t["function"]["parameters"].get("properties") or {})[p].get("type") == "string"
                for p in t["function"]["parameters"].get("required") or []
            )
        )  # fmt: skip
        args = {p: "x" for p in tool["function"]["parameters"].get("required") or []}
        args[f"_z={_payload(key_marker)},_w"] = 1
        calls = [
            {"id": "c0", "type": "function",
             "function": {"name": tool["function"]["name"], "arguments": json.dumps(args)}},
            {"id": "c1", "type": "function",
             "function": {"name": f"{_payload(name_marker)} or ls", "arguments": "{}"}},
        ]  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": calls}

    return answer


@needs_bfcl
@in_module_loop
async def test_a_models_keys_and_names_never_run_as_code_in_bfcl(
    checker: Checker, entries: dict[str, Entry], tmp_path: Path
) -> None:
    key_marker, name_marker = tmp_path / "PWNED-by-key", tmp_path / "PWNED-by-name"
    base = {k: e for k, e in entries.items() if e.category == "multi_turn_base"}
    with _server(base, _hostile(key_marker, name_marker)) as url:
        out = tmp_path / "hostile.jsonl"
        settings = BfclSettings(
            serving=Serving(base_url=url), categories=("multi_turn_base",), limit=1, out=out
        )
        await run_bfcl(settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run)
    (record,) = flat_items(out)
    assert not key_marker.exists() and not name_marker.exists()
    assert record["request_error"] is None and record["error_type"] is not None
    first = record["turns"][0]["steps"][0]
    # Neither call ran, both are recorded as the model wrote them, and the model read why.
    assert first["calls"] == [] and len(first["refused"]) == 2
    assert "is not one of them" in first["results"][0]
    assert "there is no tool named" in first["results"][1]
    assert record["checker_input"][0][0] == [] and record["calls"] == []


@needs_bfcl
@in_module_loop
async def test_bfcls_checker_refuses_calls_it_was_not_offered(
    checker: Checker, entries: dict[str, Entry], tmp_path: Path
) -> None:
    """What reaches the checker however it got there (a record edited by hand, a rescoring):
    a function the entry does not have, or a key its function does not declare, is refused
    before BFCL builds code from it."""
    marker = tmp_path / "PWNED"
    entry = next(e for e in entries.values() if e.category == "multi_turn_base")
    name = entry.names[entry.tools[0]["function"]["name"]]
    forged = [
        {f"{_payload(marker)} or {name}": "{}"},
        {name: json.dumps({f"_z={_payload(marker)},_w": 1})},
        {name: json.dumps({"__class__": 1})},
    ]
    for call in forged:
        with pytest.raises(EvalError, match="Refused"):
            await checker.execute(entry.id, "forged", [call])
        with pytest.raises(EvalError, match="Refused"):
            await checker.score_multi(entry.id, entry.category, [[[call]]])
    await checker.forget("forged")
    assert not marker.exists()
    assert checker.sandbox is not None and checker.sandbox.startswith("landlock ABI")
