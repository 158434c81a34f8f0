"""The scripted scenarios as pure functions of the transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cancel import CancelToken
from harness.tools import ToolContext, list_files, listed_sizes
from harness.workspace import create_workspace
from serve_local.scenarios import SCENARIOS, Reply, Transcript, read_listing

LISTING = "access.log  75 bytes\nerrors.log  150 bytes\nnotes.txt  30 bytes"
CONTENTS = {
    "c1": LISTING,
    "c2": "10.0.0.4 GET /health 200\n",
    "c3": "ERROR worker 7 timed out after 30000 ms\n",
    "c4": "Remember to rotate your logs.\n",
}


def reply(
    name: str,
    turn: int,
    tool_text: str = "",
    question: str = "",
    results: dict[str, str] | None = None,
) -> Reply:
    return SCENARIOS[name](Transcript(turn, tool_text, question, results or {}))


def names(r: Reply) -> list[str]:
    return [name for _, name, _ in r.calls]


def test_plan_lists_reads_answers() -> None:
    assert names(reply("plan", 0)) == ["list_files"]
    assert reply("plan", 1).calls == [("c2", "read_file", {"path": "errors.log"})]
    assert reply("plan", 2).content == (
        "errors.log mentions a timeout: worker 7 timed out after 30000 ms."
    )


@pytest.mark.parametrize("turn", [0, 7, 99])
def test_runaway_never_answers(turn: int) -> None:
    r = reply("runaway", turn)
    assert r.content is None and r.calls == [(f"c{turn + 1}", "list_files", {})]


def test_recover_recovers_only_when_told_what_to_do() -> None:
    told = "Error: no such file: timeout.log. Call list_files to see what exists."
    assert reply("recover", 1, told).calls == [("c2", "list_files", {})]
    assert reply("recover", 2, told).calls == [("c3", "read_file", {"path": "errors.log"})]
    assert reply("recover", 3, told).content == "errors.log mentions a timeout."
    assert reply("recover", 1, "Error: the tool call failed.").content == (
        "I could not read the file, so I do not know."
    )


def test_duplicate_repeats_the_same_call_on_consecutive_turns() -> None:
    (_, n1, a1), (_, n2, a2) = reply("duplicate", 1).calls + reply("duplicate", 2).calls
    assert (n1, a1) == (n2, a2) == ("read_file", {"path": "errors.log"})


@pytest.mark.parametrize(
    ("delete_result", "answer"),
    [
        ("deleted access.log", "Deleted access.log to free space."),
        ("The user declined this deletion: keep it.", "I did not delete anything"),
        ("", "Deleted access.log to free space."),  # nothing written: the agent assumes success
    ],
)
def test_destructive_answer_follows_what_the_transcript_says(
    delete_result: str, answer: str
) -> None:
    assert reply("destructive", 1).calls == [("c2", "delete_file", {"path": "access.log"})]
    final = reply("destructive", 2, results={"c1": LISTING, "c2": delete_result})
    assert final.content is not None and final.content.startswith(answer)


@pytest.mark.parametrize(
    ("question", "must", "must_not"),
    [
        ("Which file mentions a timeout?", ["errors.log"], ["notes.txt", "access.log"]),
        ("How many files are there?", ["3"], []),
        ("What does notes.txt say?", ["rotate"], []),
        ("List the files and read each one.", ["errors.log", "access.log", "notes.txt"], []),
        ("Which file is the largest?", ["errors.log"], ["notes.txt", "access.log"]),
        ("Is there a file about rotating logs?", ["notes.txt"], []),
    ],
)
def test_oracle_answers_the_six_tasks(question: str, must: list[str], must_not: list[str]) -> None:
    assert names(reply("oracle", 0)) == ["list_files"]
    reads = reply("oracle", 1, results={"c1": LISTING}).calls
    assert [(cid, a) for cid, _, a in reads] == [
        ("c2", {"path": "access.log"}),
        ("c3", {"path": "errors.log"}),
        ("c4", {"path": "notes.txt"}),
    ]
    answer = reply("oracle", 2, question=question, results=CONTENTS).content or ""
    for word in must:
        assert word in answer
    for word in must_not:
        assert word not in answer


def test_malformed_sends_an_unknown_tool_and_arguments_that_are_not_json() -> None:
    wire = reply("malformed", 0).wire_tool_calls()
    assert wire[0]["function"]["name"] == "drop_database"
    assert wire[1]["function"]["arguments"] == '{"path": '


async def test_the_scripted_reading_of_a_listing_agrees_with_what_the_harness_writes(
    tmp_path: Path,
) -> None:
    """serve_local reads list_files' text on its own (it never imports the harness): a listing
    the real tool writes, names with spaces and dots included, reads back name for name."""
    files = {"a b.txt": "x" * 7, "errors.log": "y" * 150, "n.o.t.e.s": ""}
    workspace = create_workspace(tmp_path / "ws", files=files)
    result = await list_files({}, ToolContext(workspace=workspace, cancel=CancelToken()))
    assert read_listing(result) == listed_sizes(result) == {n: len(c) for n, c in files.items()}
