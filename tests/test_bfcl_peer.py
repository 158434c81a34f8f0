"""Inspect's own BFCL (inspect_evals, in .venv-inspect) on the items of one of our BFCL runs,
through a real server, and the comparison of the two harnesses' verdicts.

The end-to-end test runs Inspect for real against a scripted OpenAI-shaped server that answers
our runner and Inspect apart (it tells them by the tools they send), so each cause of a
disagreement is known in advance; the committed comparison is rebuilt from its files.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from evals.bfcl import peer
from evals.bfcl.bridge import Checker
from evals.bfcl.items import Item
from evals.bfcl.run import BfclSettings, run_bfcl
from evals.errors import EvalError
from evals.record.bfcl import read_items
from evals.report.bfcl import summarize_bfcl_run
from evals.run.servers import Serving
from lab.report import bfcl_peer
from lab.report.docs import block
from serve_local.inprocess import running_server
from tests.test_bfcl import calling, needs_bfcl, right_arguments, wrong_arguments

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "results" / "bfcl" / "inspect" / "peer.jsonl"

needs_inspect = pytest.mark.skipif(
    not peer.inspect_python().exists(),
    reason=f"Inspect's virtualenv is absent ({peer.inspect_python()}): `make bfcl-inspect` "
    "creates it (`make test` does so first)",
)


def _item(**fields: Any) -> bfcl_peer.PeerItem:
    base: dict[str, Any] = {
        "id": "simple_python_1",
        "category": "simple_python",
        "ours": True,
        "theirs": False,
        "our_calls": [("f", {"x": 1})],
        "server_calls": [("f", {"x": 1})],
        "their_calls": [("f", {"x": 1})],
        "parse_errors": [],
        "our_errors": [],
        "their_explanation": "",
        "request_differences": [],
    }
    return bfcl_peer.PeerItem(**{**base, **fields})


def test_each_cause_is_read_off_the_fields_in_order() -> None:
    assert bfcl_peer._cause(_item()) == "checking"
    # Argument order is no difference.
    both = {"our_calls": [("f", {"x": 1, "y": 2})], "their_calls": [("f", {"y": 2, "x": 1})]}
    assert bfcl_peer._cause(_item(server_calls=[("f", {"y": 2, "x": 1})], **both)) == "checking"
    other = {"server_calls": [("f", {"x": 2})], "their_calls": [("f", {"x": 2})]}
    assert bfcl_peer._cause(_item(**other)) == "generation"
    assert bfcl_peer._cause(_item(**other, request_differences=["tools"])) == "prompting"
    # A reply Inspect parsed into something else is parsing, whatever the requests were.
    assert bfcl_peer._cause(_item(their_calls=[], request_differences=["tools"])) == "parsing"
    assert bfcl_peer._cause(_item(parse_errors=["bad JSON"])) == "parsing"


def test_request_differences_name_the_paths_and_ignore_the_clients_own_fields() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ours = {"messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
    theirs = {
        "messages": [{"role": "user", "content": "hi", "id": "abc", "source": "input"}],
        "tools": [tool],
        "tool_choice": "auto",
    }
    assert bfcl_peer.request_differences(ours, theirs) == []
    strict = json.loads(json.dumps(tool))
    strict["function"]["parameters"]["additionalProperties"] = False
    strict["function"]["parameters"]["type"] = "dict"
    found = bfcl_peer.request_differences(ours, {**theirs, "tools": [strict]})
    assert found == [
        "tools[0].function.parameters.additionalProperties: only Inspect's",
        'tools[0].function.parameters.type: "object" ≠ "dict"',
    ]
    assert bfcl_peer.request_differences(ours, None) == ["a request is missing"]


def test_without_inspects_virtualenv_the_error_says_how_to_make_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("INSPECT_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(peer.InspectUnavailable, match="make bfcl-inspect"):
        peer.run_inspect(["simple_python_1"], ["simple_python"], base_url="x", model="m",
                         log_dir=tmp_path)  # fmt: skip


@needs_bfcl
def test_the_cache_holds_bfcl_evals_own_files(tmp_path: Path) -> None:
    folder = peer.fill_cache(tmp_path, ["simple_python", "irrelevance"])
    data = peer.bfcl_data()
    for name in ("BFCL_v4_simple_python.json", "BFCL_v4_irrelevance.json"):
        assert (folder / name).read_bytes() == (data / name).read_bytes()
    assert (folder / "possible_answer" / "BFCL_v4_simple_python.json").is_file()
    with pytest.raises(peer.InspectUnavailable, match="no_such_category"):
        peer.fill_cache(tmp_path, ["no_such_category"])


def _question(body: dict[str, Any]) -> str:
    return next(str(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user")


@needs_bfcl
@needs_inspect
def test_inspects_bfcl_on_our_items_through_a_real_server(tmp_path: Path) -> None:
    """Our runner asks three items, then Inspect asks the same three through the same server,
    which answers Inspect apart: the right call, wrong values, arguments that are no JSON."""

    async def load() -> list[Item]:
        async with Checker() as checker:
            loaded = await checker.load(["simple_python"])
        return [Item.from_checker(raw) for raw in loaded["items"]]

    by_question = {str(i.messages[-1]["content"]): i for i in asyncio.run(load())}
    right, wrong = calling(right_arguments), calling(wrong_arguments)
    roles: dict[str, str] = {}  # item id -> how Inspect is answered
    asked: list[tuple[str, str]] = []

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "bfcl-script", "object": "model"}]})

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        item = by_question[_question(body)]
        who = "ours" if body.get("tools") == item.tools else "inspect"
        asked.append((who, item.id))
        message = right(item)
        if who == "inspect" and roles.get(item.id) == "wrong":
            message = wrong(item)
        if who == "inspect" and roles.get(item.id) == "no JSON":
            message["tool_calls"][0]["function"]["arguments"] = '{"unfinished": '
        return JSONResponse(
            {
                "id": "chatcmpl-peer",
                "object": "chat.completion",
                "created": 0,
                "model": "bfcl-script",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )

    routes = [Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])]
    with running_server(Starlette(routes=routes)) as url:  # type: ignore[arg-type]
        settings = BfclSettings(
            serving=Serving(base_url=url),
            out=tmp_path / "ours.jsonl",
            categories=("simple_python",),
            limit=3,
        )
        ours_file = asyncio.run(
            run_bfcl(settings, echo=lambda _: None, summarize=summarize_bfcl_run)
        )
        records = read_items(ours_file)
        assert [r.valid for r in records] == [True, True, True]
        ids, categories = peer.peer_ids(records)
        roles.update({ids[1]: "wrong", ids[2]: "no JSON"})
        requests = asyncio.run(peer.our_requests(ids, categories))
        log = peer.run_inspect(
            ids, categories, base_url=url, model="bfcl-script", log_dir=tmp_path / "peer",
            echo=lambda _: None,
        )  # fmt: skip
    assert sorted(i for who, i in asked if who == "inspect") == sorted(ids)
    out = peer.write_peer_items(
        tmp_path / "peer" / "peer.jsonl", log, peer.log_items(log), requests, ours_file
    )
    comparison = bfcl_peer.write(out, out.with_suffix(".md"))
    got = {i.id: i for i in comparison.items}
    assert set(got) == set(ids) and not comparison.left_out
    assert (got[ids[0]].ours, got[ids[0]].theirs, got[ids[0]].cause) == (True, True, None)
    wrong_values = got[ids[1]]
    assert (wrong_values.ours, wrong_values.theirs) == (True, False)
    # The same question sent with other tools, answered otherwise: prompting, and the page
    # names where the requests differ.
    assert wrong_values.request_differences
    assert wrong_values.cause == "prompting"
    unparsed = got[ids[2]]
    assert (unparsed.ours, unparsed.theirs, unparsed.cause) == (True, False, "parsing")
    page = out.with_suffix(".md").read_text()
    assert f"| {ids[1]} | ✓ | ✗ | prompting |" in page
    assert f"| {ids[2]} | ✓ | ✗ | parsing |" in page
    assert "same verdict [95 % Wilson]" in page and "1/3" in page


def test_the_committed_comparison_is_rebuilt_from_its_files(tmp_path: Path) -> None:
    """The page under results/bfcl/inspect/ is what its files give today; a copy whose verdict
    was edited gives another page."""
    page = COMMITTED.with_suffix(".md")
    comparison = bfcl_peer.compare(COMMITTED)
    assert bfcl_peer.markdown(comparison) == page.read_text(encoding="utf-8")
    assert block(bfcl_peer.DOCS, bfcl_peer.BLOCK) == bfcl_peer.summary(comparison)
    header, lines = bfcl_peer.read_peer(COMMITTED)
    ours = (COMMITTED.parent / header["ours"]).resolve()
    shutil.copy(ours, tmp_path / ours.name)
    flipped = dict(lines[0], value=0 if lines[0]["value"] else 1)
    edited = tmp_path / "peer.jsonl"
    edited.write_text(
        "\n".join(json.dumps(x) for x in [{"header": {**header, "ours": ours.name}}, flipped,
                                           *lines[1:]]) + "\n"
    )  # fmt: skip
    assert bfcl_peer.markdown(bfcl_peer.compare(edited)) != page.read_text(encoding="utf-8")


def test_a_file_without_its_header_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "peer.jsonl"
    bad.write_text('{"id": "simple_python_1"}\n')
    with pytest.raises(EvalError, match="not a peer run file"):
        bfcl_peer.compare(bad)
