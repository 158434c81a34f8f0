"""BFCL through the project's client, judged by BFCL's own checker (bfcl-eval, in .venv-bfcl).

The scripted servers here answer each BFCL item from its ``possible_answer`` (or against it),
over real HTTP, so the checker's verdicts on them are known in advance.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
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
from evals.bfcl.items import DEFAULT_CATEGORIES, Item, function_name
from evals.bfcl.run import BfclSettings, run_bfcl
from evals.bfcl.run import resumed_settings as resumed_bfcl_settings
from evals.errors import EvalError
from evals.report.bfcl import summarize_bfcl_run
from evals.run.servers import Serving
from serve_local.inprocess import running_server
from tests.helpers import flat_items

needs_bfcl = pytest.mark.skipif(
    not bfcl_python().exists(),
    reason=f"BFCL's virtualenv is absent ({bfcl_python()}): `make bfcl-venv` creates it "
    "(`make test` does so first)",
)

# BFCL's parameter types and the JSON Schema type its OpenAI handler gives each.
JSON_TYPE = {
    "integer": "integer",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "any": "string",
}
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

Message = dict[str, Any]


# One checker for the module: starting one imports all of bfcl-eval (about 8 s), and a run
# given a checker judges with it instead of starting its own.
in_module_loop = pytest.mark.asyncio(loop_scope="module")  # where the checker lives


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def checker() -> AsyncIterator[Checker]:
    async with Checker() as started:
        yield started


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def items(checker: Checker) -> list[Item]:
    loaded = await checker.load(list(DEFAULT_CATEGORIES))
    return [Item.from_checker(raw) for raw in loaded["items"]]


def _key(messages: list[Message], tools: list[dict[str, Any]]) -> str:
    return json.dumps([messages, tools], sort_keys=True)


def _server(
    items: list[Item], answer: Callable[[Item], Message], seen: list[dict[str, Any]]
) -> AbstractContextManager[str]:
    """An OpenAI-shaped server that knows every item and answers it with ``answer``."""
    by_request = {_key(i.messages, i.tools): i for i in items}

    async def models(_: Request) -> JSONResponse:
        entry = {"id": "bfcl-script", "object": "model", "owned_by": "tests", "sha256": "0" * 64,
                 "backend": "scripted-bfcl", "tool_grammar": "lazy"}  # fmt: skip
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        message = answer(by_request[_key(body["messages"], body.get("tools", []))])
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return JSONResponse(
            {
                "id": "chatcmpl-bfcl",
                "object": "chat.completion",
                "model": "bfcl-script",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    return running_server(Starlette(routes=routes))  # type: ignore[arg-type]


def _first(options: list[Any]) -> Any:
    """The first accepted value of a possible_answer entry; a dict's (or a list of dicts')
    own entries are lists of accepted values too."""
    value = next(o for o in options if o != "")

    def one(d: dict[str, Any]) -> dict[str, Any]:
        return {
            k: _first(o) for k, o in d.items() if isinstance(o, list) and any(x != "" for x in o)
        }

    if isinstance(value, dict):
        return one(value)
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return [one(x) for x in value]
    return value


def right_arguments(item: Item, function: str, params: dict[str, list[Any]]) -> dict[str, Any]:
    """What possible_answer accepts: a parameter that may be left out ("" among its values)
    is left out unless the function requires it."""
    spec = next(f for f in item.functions if f["name"] == function)
    required = spec["parameters"].get("required", [])
    return {p: _first(o) for p, o in params.items() if "" not in o or p in required}


def _wrong(value: Any) -> Any:
    """A value of the same type that possible_answer does not accept."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return value + " and something else entirely"
    if isinstance(value, list):
        return [*value, value[0]] if value else [7919]
    if isinstance(value, dict):
        return {k: _wrong(v) for k, v in value.items()} or {"unexpected": 7919}
    return value


def wrong_arguments(item: Item, function: str, params: dict[str, list[Any]]) -> dict[str, Any]:
    right = right_arguments(item, function, params)
    return {k: _wrong(v) for k, v in right.items()} or {"unexpected": 7919}


def calling(
    build: Callable[[Item, str, dict[str, list[Any]]], dict[str, Any]],
) -> Callable[[Item], Message]:
    """Answers with one call per ground-truth call, under the offered (tool) names."""

    def answer(item: Item) -> Message:
        if item.ground_truth is None:
            return {"role": "assistant", "content": "None of these functions can answer that."}
        tool_name = {bfcl: tool for tool, bfcl in item.names.items()}
        calls = [
            {
                "id": f"c{n}",
                "type": "function",
                "function": {
                    "name": tool_name[function],
                    "arguments": json.dumps(build(item, function, params)),
                },
            }
            for n, call in enumerate(item.ground_truth)
            for function, params in call.items()
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}

    return answer


def call_anything(item: Item) -> Message:
    """The first offered tool, called with no arguments."""
    tool = item.tools[0]["function"]["name"]
    call = {"id": "c0", "type": "function", "function": {"name": tool, "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


async def _run(
    checker: Checker, url: str, tmp_path: Path, **extra: Any
) -> tuple[Path, list[dict[str, Any]]]:
    settings = BfclSettings(serving=Serving(base_url=url), out=tmp_path / "bfcl.jsonl", **extra)
    out = await run_bfcl(
        settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
    )
    return out, flat_items(out)


def _summary(out: Path) -> dict[str, Any]:
    return json.loads(out.with_suffix("").with_name(out.stem + ".summary.json").read_text())


@needs_bfcl
@in_module_loop
async def test_answers_from_possible_answer_score_everything(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    with _server(items, calling(right_arguments), seen) as url:
        out, records = await _run(checker, url, tmp_path, limit=4, seed=3)
    assert [r["category"] for r in records] == [c for c in DEFAULT_CATEGORIES for _ in range(4)]
    assert all(r["valid"] for r in records), [
        (r["id"], r["errors"]) for r in records if not r["valid"]
    ]
    # One request per item, the item's functions as tools, tool_choice left to the server.
    assert len(seen) == len(records)
    assert all(b["temperature"] == 0 and "tool_choice" not in b and b["tools"] for b in seen)
    # Dotted names reached the model with underscores and the checker with BFCL's own names.
    renamed = [c for r in records for c in r["calls"] if c["name"] != c["function"]]
    assert renamed and all(c["name"] == c["function"].replace(".", "_") for c in renamed)
    irrelevance = [r for r in records if r["category"] == "irrelevance"]
    assert irrelevance and all(not r["calls"] and r["content"] for r in irrelevance)
    summary = _summary(out)
    for category in DEFAULT_CATEGORIES:
        rate = summary["categories"][category]
        low, high = rate["ci95"]
        assert (rate["n"], rate["correct"], rate["accuracy"]) == (4, 4, 1.0)
        assert 0.0 < low < 1.0 == high  # Wilson's interval, not a zero-width one
    assert records[0]["model_sha256"] == "0" * 64 and records[0]["tool_grammar"] == "lazy"
    table = (tmp_path / "summary.md").read_text()
    assert out.stem in table and "Qwen2.5-0.5B-Instruct" in table


@needs_bfcl
@in_module_loop
async def test_wrong_values_and_calls_on_irrelevance_score_nothing(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    def answer(item: Item) -> Message:
        return call_anything(item) if item.ground_truth is None else calling(wrong_arguments)(item)

    with _server(items, answer, []) as url:
        out, records = await _run(checker, url, tmp_path, limit=4, seed=3)
    assert len(records) == 4 * len(DEFAULT_CATEGORIES) and not any(r["valid"] for r in records)
    for r in records:
        if r["category"] == "irrelevance":
            assert r["error_type"] == "irrelevance_error:decoder_success"
        else:  # decoded, then refused for what the arguments say
            assert r["error_type"] and not r["error_type"].startswith("ast_decoder"), r
    summary = _summary(out)
    assert all(
        c["accuracy"] == 0.0 and c["ci95"][0] == 0.0 < c["ci95"][1]
        for c in summary["categories"].values()
    )


@needs_bfcl
@in_module_loop
async def test_arguments_failing_the_schema_are_recorded_and_still_judged(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    def as_text(item: Item) -> Message:  # every value that is not a string sent as its text
        message = calling(right_arguments)(item)
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
            call["function"]["arguments"] = json.dumps(text)
        return message

    with _server(items, as_text, []) as url:
        _, records = await _run(
            checker, url, tmp_path, categories=("simple_python",), limit=6, seed=1
        )
    by_id = {i.id: i for i in items}

    def declared(record: dict[str, Any]) -> set[str]:
        (function,) = by_id[record["id"]].functions
        sent = json.loads(record["calls"][0]["arguments"])
        return {function["parameters"]["properties"][k]["type"] for k in sent}

    typed = [r for r in records if declared(r) - {"string", "any"}]
    assert typed, "the sample needs an item with a parameter that is not a string"
    for r in typed:
        assert r["schema_problems"][0] and "is not of type" in r["schema_problems"][0], r
        assert not r["valid"] and r["error_type"].startswith("type_error"), r


@needs_bfcl
def test_names_and_types_round_trip_on_every_function(items: list[Item]) -> None:
    assert {i.category for i in items} == set(DEFAULT_CATEGORIES)

    def same_types(bfcl: dict[str, Any], tool: dict[str, Any], where: str) -> None:
        assert tool["type"] == JSON_TYPE.get(bfcl.get("type", "any"), "string"), where
        if "properties" in bfcl and bfcl.get("type") != "any":
            for name, spec in bfcl["properties"].items():
                same_types(spec, tool["properties"][name], f"{where}.{name}")
        if "items" in bfcl:
            same_types(bfcl["items"], tool["items"], f"{where}[]")

    functions = 0
    for item in items:
        assert len(item.tools) == len(item.functions) == len(item.names), item.id
        for function, tool in zip(item.functions, item.tools, strict=True):
            name = tool["function"]["name"]
            assert OPENAI_NAME.match(name) and "." not in name, (item.id, name)
            assert function_name(item, name) == function["name"], item.id
            schema = tool["function"]["parameters"]
            assert schema["type"] == "object"
            assert set(schema["properties"]) == set(function["parameters"]["properties"])
            assert schema.get("required", []) == function["parameters"].get("required", [])
            for param, spec in function["parameters"]["properties"].items():
                same_types(
                    spec, schema["properties"][param], f"{item.id}:{function['name']}.{param}"
                )
            functions += 1
    assert functions >= len(items)


def test_without_the_bfcl_virtualenv_the_command_says_how_to_make_it(tmp_path: Path) -> None:
    with _server([], lambda _: {}, []) as url:
        command = ["-m", "evals", "bfcl", "--base-url", url, "--out", str(tmp_path / "x.jsonl")]
        done = subprocess.run(
            [sys.executable, *command],
            env={**os.environ, "BFCL_PYTHON": str(tmp_path / "no-venv" / "python")},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert "make bfcl-venv" in done.stderr and "no-venv" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_category_is_refused_before_any_request(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    with _server([], lambda _: {}, seen) as url, pytest.raises(EvalError, match="simple_python"):
        asyncio.run(
            run_bfcl(
                BfclSettings(serving=Serving(base_url=url), categories=("simple",)), echo=print
            )
        )
    assert seen == []


@needs_bfcl
@in_module_loop
async def test_max_tokens_is_sent_with_every_item_and_recorded(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    with _server(items, calling(right_arguments), seen) as url:
        capped, records = await _run(checker, url, tmp_path, limit=2, max_tokens=64)
        uncapped, _ = await _run(
            checker, url, tmp_path / "b", limit=1, categories=("simple_python",)
        )
    asked = len(records)
    assert [b["max_tokens"] for b in seen[:asked]] == [64] * asked
    assert "max_tokens" not in seen[asked]  # without the option the server's own cap holds
    assert {r["max_tokens"] for r in records} == {64}
    assert _summary(capped)["max_tokens"] == 64 and _summary(uncapped)["max_tokens"] is None
    assert "reply cap: 64 tokens" in Path(f"{capped.with_suffix('')}.summary.md").read_text()
    row = next(line for line in (tmp_path / "summary.md").read_text().splitlines()
               if line.startswith(f"| {capped.stem} |"))  # fmt: skip
    assert "| lazy | 64 |" in row


def _interrupted(full: Path, kept: int, tmp_path: Path) -> Path:
    """What a run killed after ``kept`` judged items leaves: their records in its .partial."""
    partial = tmp_path / "interrupted.jsonl.partial"
    lines = full.read_text().splitlines(keepends=True)
    partial.write_text("".join(lines[:kept]))
    return partial


@needs_bfcl
@in_module_loop
async def test_resume_asks_only_the_items_without_a_record(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    with _server(items, calling(right_arguments), seen) as url:
        full, before = await _run(checker, url, tmp_path, limit=2, seed=5, max_tokens=32, label="x")
        partial = _interrupted(full, 3, tmp_path)
        seen.clear()
        settings = resumed_bfcl_settings(partial, base_url=url)
        out = await run_bfcl(
            settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
        )
    after = flat_items(out)
    assert out == tmp_path / "interrupted.jsonl" and not partial.exists()
    # The same items in the same order; the kept records untouched, the rest asked once each.
    assert [r["id"] for r in after] == [r["id"] for r in before]
    assert after[:3] == before[:3]
    by_request = {_key(i.messages, i.tools): i.id for i in items}
    asked = [by_request[_key(b["messages"], b.get("tools", []))] for b in seen]
    assert asked == [r["id"] for r in before[3:]]
    # Its settings came from the records: the cap, the label, the sample.
    assert all(b["max_tokens"] == 32 for b in seen)
    assert {(r["label"], r["seed"], r["limit"], r["max_tokens"]) for r in after} == {
        ("x", 5, 2, 32)
    }
    assert sum(c["correct"] for c in _summary(out)["categories"].values()) == len(before)


def _changed(record: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A record as written, with what ran (``spec``) or BFCL's run (``bfcl``) changed."""
    part = "spec" if key in record["spec"] else "bfcl"
    return {**record, part: {**record[part], key: value}}


@needs_bfcl
@in_module_loop
async def test_resume_refuses_another_model(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    with _server(items, calling(right_arguments), seen) as url:
        full, _ = await _run(
            checker, url, tmp_path, limit=1, categories=("simple_python", "irrelevance")
        )
        partial = _interrupted(full, 1, tmp_path)
        record = json.loads(partial.read_text())
        partial.write_text(json.dumps(_changed(record, "model_sha256", "1" * 64)) + "\n")
        seen.clear()
        settings = resumed_bfcl_settings(partial, base_url=url)
        with pytest.raises(EvalError, match="same weights") as refused:
            await run_bfcl(
                settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
            )
    assert "1" * 64 in str(refused.value) and "0" * 64 in str(refused.value)
    assert seen == [] and partial.read_text().count("\n") == 1  # nothing asked, nothing lost


def test_resume_refuses_what_it_cannot_go_on_with(tmp_path: Path) -> None:
    finished = tmp_path / "done.jsonl"
    finished.write_text("{}\n")
    with pytest.raises(EvalError, match="is finished"):
        resumed_bfcl_settings(finished, base_url="http://127.0.0.1:1/v1")
    with pytest.raises(EvalError, match="nothing to resume"):
        resumed_bfcl_settings(tmp_path / "never.jsonl", base_url="http://127.0.0.1:1/v1")
    empty = tmp_path / "empty.jsonl.partial"
    empty.write_text("")
    with pytest.raises(EvalError, match="no record yet"):
        resumed_bfcl_settings(empty, base_url="http://127.0.0.1:1/v1")
    corrupt = tmp_path / "corrupt.jsonl.partial"
    corrupt.write_text('{"id": "simple_python_0"}\n{"id": \n')
    with pytest.raises(EvalError, match=r"corrupt\.jsonl\.partial, line 2"):
        resumed_bfcl_settings(corrupt, base_url="http://127.0.0.1:1/v1")
    old = tmp_path / "old.jsonl.partial"
    # A record of version 1 from before the run kept which categories it was asked.
    before = {"id": "simple_python_0", "model": "m", "seed": 0, "category": "simple_python"}
    old.write_text(json.dumps(before) + "\n")
    with pytest.raises(EvalError, match="which categories were asked"):
        resumed_bfcl_settings(old, base_url="http://127.0.0.1:1/v1")
    # What is no item record at all is refused with the file and line that hold it.
    wrong = tmp_path / "wrong.jsonl.partial"
    wrong.write_text(json.dumps({"id": "simple_python_0", "model": "m", "valid": "maybe"}) + "\n")
    with pytest.raises(EvalError, match=r"wrong\.jsonl\.partial, line 1: not a BFCL item record"):
        resumed_bfcl_settings(wrong, base_url="http://127.0.0.1:1/v1")


def test_the_command_refuses_a_finished_run_and_a_cap_below_one(tmp_path: Path) -> None:
    finished = tmp_path / "done.jsonl"
    finished.write_text("{}\n")
    base = [sys.executable, "-m", "evals", "bfcl", "--base-url", "http://127.0.0.1:1/v1"]
    done = subprocess.run(
        [*base, "--resume", str(finished)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "is finished" in done.stderr
    capped = subprocess.run(
        [*base, "--max-tokens", "0"], capture_output=True, text=True, timeout=120
    )
    assert capped.returncode == 1 and "--max-tokens must be at least 1" in capped.stderr


@needs_bfcl
@in_module_loop
async def test_a_failed_request_is_no_answer_even_on_irrelevance(
    checker: Checker, tmp_path: Path
) -> None:
    """A server that refuses every request (401): BFCL would read the error text as "no call",
    which irrelevance credits. Here no item is valid and no rate counts one."""

    async def models(_: Request) -> JSONResponse:
        entry = {"id": "bfcl-refuses", "object": "model", "owned_by": "tests", "sha256": "0" * 64,
                 "backend": "scripted-bfcl", "tool_grammar": "lazy"}  # fmt: skip
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(_: Request) -> JSONResponse:
        error = {"message": "no key", "type": "auth", "param": None, "code": None}
        return JSONResponse({"error": error}, status_code=401)

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    with running_server(Starlette(routes=routes)) as url:  # type: ignore[arg-type]
        out, records = await _run(
            checker, url, tmp_path, limit=3, categories=("irrelevance", "simple_python")
        )
    assert len(records) == 6 and all(r["request_error"] for r in records)
    assert not any(r["valid"] for r in records)
    summary = _summary(out)
    assert summary["request_errors"] == 6
    assert summary["call_mean"] is None  # no answered item: no mean to take
    assert all(c["n"] == 0 and c["correct"] == 0 for c in summary["categories"].values())


def no_call(item: Item) -> Message:
    return {"role": "assistant", "content": "I would rather not call anything."}


@needs_bfcl
@in_module_loop
async def test_a_model_that_never_calls_gets_no_credit_from_pooling(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    """Relevance is apart: a model that makes no call is right on every irrelevance item and
    wrong on every call item. Pooled over items that read as a score; BFCL's mean of the call
    categories is 0."""
    with _server(items, no_call, []) as url:
        out, _ = await _run(
            checker, url, tmp_path, limit=3, categories=("irrelevance", "simple_python", "multiple")
        )
    summary = _summary(out)
    assert list(summary["categories"]) == ["simple_python", "multiple", "irrelevance"]
    assert summary["categories"]["irrelevance"]["correct"] == 3
    assert summary["call_mean"] == 0.0 and "pooled" not in summary
    md = Path(f"{out.with_suffix('')}.summary.md").read_text()
    assert "pooled" not in md and "| mean of the call categories" in md
    table = (tmp_path / "summary.md").read_text()
    head = next(line for line in table.splitlines() if line.startswith("| run |"))
    assert head.index("multiple") < head.index("irrelevance") < head.index("call mean")
    row = next(line for line in table.splitlines() if line.startswith(f"| {out.stem} |"))
    assert row.rstrip().endswith("| 0.0 | 0 |")


@needs_bfcl
@in_module_loop
async def test_resume_refuses_records_made_under_other_settings(
    checker: Checker, items: list[Item], tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    with _server(items, calling(right_arguments), seen) as url:
        full, before = await _run(
            checker, url, tmp_path, limit=1, categories=("simple_python", "multiple")
        )
        for key, value, what in [
            ("tool_grammar", "off", "tool grammar"),
            ("bfcl_eval", "2025.1.1", "bfcl-eval"),
            ("draft", "on", "draft setting"),
        ]:
            partial = _interrupted(full, 1, tmp_path)
            record = json.loads(partial.read_text())
            partial.write_text(json.dumps(_changed(record, key, value)) + "\n")
            seen.clear()
            settings = resumed_bfcl_settings(partial, base_url=url)
            with pytest.raises(EvalError, match=f"resume under the same {what}") as refused:
                await run_bfcl(
                    settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
                )
            message = str(refused.value)
            assert f"{what} {value}" in message and f"this run has {before[0][key]}" in message
            assert seen == [] and partial.read_text().count("\n") == 1


@needs_bfcl
@in_module_loop
async def test_a_checker_failure_mid_run_leaves_the_partial_file_whole(
    checker: Checker, items: list[Item], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker fails on the fourth verdict while other items are in flight: no item starts
    after it, those in flight end before the partial file closes, every line in it is a whole
    record, and a resume goes on."""
    real = Checker.score
    calls = 0
    seen: list[dict[str, Any]] = []
    asked_by_then = 0

    async def failing(self: Checker, item_id: str, category: str, result: Any) -> Any:
        nonlocal calls, asked_by_then
        calls += 1
        if calls == 4:
            asked_by_then = len(seen)
            raise EvalError("the checker went away")
        return await real(self, item_id, category, result)

    monkeypatch.setattr(Checker, "score", failing)
    out = tmp_path / "bfcl.jsonl"
    with _server(items, calling(right_arguments), seen) as url:
        settings = BfclSettings(
            serving=Serving(base_url=url, concurrency=3),
            out=out,
            limit=4,
            categories=("simple_python", "multiple"),
        )
        with pytest.raises(EvalError, match="the checker went away"):
            await run_bfcl(
                settings, echo=lambda _: None, checker=checker, summarize=summarize_bfcl_run
            )
        # Nothing of the run is left going: no item started after the failure, none still
        # running to write to a closed file.
        assert len(seen) <= asked_by_then < 8
        # (The checker's own pipe, reading its answers and its stderr, lives as long as it.)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert [t for t in left if not t.get_name().startswith("pipe: ")] == []
        partial = tmp_path / "bfcl.jsonl.partial"
        lines = partial.read_text().splitlines()
        assert 3 <= len(lines) < 8 and not out.exists()
        assert all(json.loads(line)["valid"] for line in lines)
        monkeypatch.setattr(Checker, "score", real)
        done = await run_bfcl(
            resumed_bfcl_settings(partial, base_url=url),
            echo=lambda _: None,
            checker=checker,
            summarize=summarize_bfcl_run,
        )
    assert len(flat_items(done)) == 8


@needs_bfcl
@in_module_loop
async def test_a_cancelled_request_leaves_the_next_one_its_own_answer(
    checker: Checker, items: list[Item]
) -> None:
    """A run cancelled while the checker judges one of its items shares the checker with the
    next run: the next request must read its own answer, not the one left in the pipe."""
    item = next(i for i in items if i.category == "simple_python")
    pending = asyncio.ensure_future(checker.score(item.id, item.category, "no call"))
    while not checker._waiting:  # the request is written and its answer awaited
        await asyncio.sleep(0)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    loaded = await checker.load(["simple_python"])
    assert {i["id"] for i in loaded["items"]} >= {item.id}
    verdict = await checker.score(item.id, item.category, "no call")
    assert verdict["valid"] is False
    assert checker.dead is None  # the answer given up on was dropped, not taken for a fault
