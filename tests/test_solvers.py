"""Workflows beside the agent loop: each solver's steps, what each request offers and asks,
what the records say, and that a workflow's evidence is read as an agent's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.database.data import DatabaseData
from evals.errors import EvalError
from evals.record import RunRecord, read_runs
from evals.record.run import parse
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.solvers import SOLVERS, solver_named
from evals.solvers.vote import SAMPLES, TEMPERATURE, majority
from evals.tasks import load_tasks
from harness.presets import preset
from harness.workspace import SEED_FILES
from serve_local.inprocess import running_server
from tests.fake_provider import answer, calls, server_app

TASKS = Path(__file__).parent.parent / "evals" / "tasks"
Reply = Callable[[dict[str, Any]], dict[str, Any]]


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def tool_results(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] == "tool")


async def _eval(
    tmp_path: Path, solver: str, reply: Reply, tasks: Path, **more: Any
) -> tuple[list[RunRecord], list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return httpx.Response(200, json=reply(body))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            serving=Serving(url, model="fake"), tasks=tasks, out=tmp_path / f"{solver}.jsonl",
            solver=solver, **more,
        )  # fmt: skip
        records = read_runs(await run_eval(settings, echo=lambda _: None))
    return records, seen


def _one_task(tmp_path: Path, task_id: str, source: Path = TASKS / "files6.json") -> Path:
    data = json.loads(source.read_text())
    data["tasks"] = [t for t in data["tasks"] if t["id"] == task_id]
    path = tmp_path / f"{task_id}.json"
    path.write_text(json.dumps(data))
    return path


def _largest(body: dict[str, Any]) -> dict[str, Any]:
    """A model that knows which seed file is the largest once it has read them."""
    if "choose_files" in offered(body):
        return calls(("p", "choose_files", json.dumps({"names": ["notes.txt", "errors.log"]})))
    return answer("errors.log is the largest.")


async def test_chain_reads_every_file_in_code_and_asks_once(tmp_path: Path) -> None:
    records, seen = await _eval(tmp_path, "chain", _largest, _one_task(tmp_path, "largest"))
    (record,) = records
    assert record.spec.solver == "chain" and record.correct, record.checks
    assert record.turns == 1 and len(seen) == 1  # one model call
    assert offered(seen[0]) == [] and "tool_choice" not in seen[0]
    assert record.tools_called == ["list_files", "read_file", "read_file", "read_file"]
    # The code's calls are in the transcript the model reads, each answered by the real tool.
    assistant = [m for m in seen[0]["messages"] if m["role"] == "assistant"]
    assert [len(m["tool_calls"]) for m in assistant] == [1, 3]
    assert all(text in tool_results(seen[0]) for text in SEED_FILES.values())


async def test_route_offers_only_the_listed_names_and_reads_what_was_picked(
    tmp_path: Path,
) -> None:
    records, seen = await _eval(tmp_path, "route", _largest, _one_task(tmp_path, "largest"))
    (record,) = records
    pick = seen[0]
    assert offered(pick) == ["choose_files"] and pick["tool_choice"] == "required"
    names = pick["tools"][0]["function"]["parameters"]["properties"]["names"]["items"]["enum"]
    assert sorted(names) == ["access.log", "errors.log", "notes.txt"]
    assert record.tools_called == ["list_files", "choose_files", "read_file", "read_file"]
    assert record.turns == 2 and record.correct


async def test_vote_samples_one_prefix_and_answers_with_the_majority(tmp_path: Path) -> None:
    answers = iter(
        [
            "access.log.",
            "errors.log.",
            "It is errors.log.",
            "notes.txt or errors.log",
            "errors.log",
        ]
    )

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return answer(next(answers))

    records, seen = await _eval(
        tmp_path, "vote", reply, _one_task(tmp_path, "largest"), loop=eval_loop(seed=7)
    )
    (record,) = records
    assert len(seen) == SAMPLES and record.turns == SAMPLES
    assert {json.dumps(b["messages"]) for b in seen} == {json.dumps(seen[0]["messages"])}
    assert [b["temperature"] for b in seen] == [TEMPERATURE] * SAMPLES
    assert [b["seed"] for b in seen] == [7, 8, 9, 10, 11]
    assert record.answer == "errors.log." and record.correct
    assert record.spec.solver == "vote"
    assert record.spec.solver_settings == {"samples": 5, "temperature": 0.7}


def test_a_vote_counts_commitments_not_words() -> None:
    task = next(t for t in load_tasks().tasks if t.id == "largest")
    texts = ["notes.txt", "The largest is errors.log.", "errors.log", "a or b", "access.log"]
    assert majority(task, texts) == 1
    assert majority(task, ["maybe", "unclear"]) == 0  # no position: the first sample


async def test_evaluate_optimize_revises_what_its_evaluator_rejects(tmp_path: Path) -> None:
    verdicts = iter(
        [{"decision": "revise", "problem": "errors.log is larger."}, {"decision": "accept"}]
    )

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "verdict" in offered(body):
            return calls(("v", "verdict", json.dumps(next(verdicts))))
        if "judged wrong" in last_user(body):
            assert "errors.log is larger." in last_user(body)
            return answer("errors.log is the largest.")
        return answer("notes.txt is the largest.")

    records, seen = await _eval(
        tmp_path, "evaluate-optimize", reply, _one_task(tmp_path, "largest")
    )
    (record,) = records
    assert record.turns == 4  # answer, verdict, answer again, verdict
    assert [offered(b) for b in seen] == [[], ["verdict"], [], ["verdict"]]
    assert record.answer == "errors.log is the largest." and record.correct


async def test_a_database_chain_runs_the_query_the_model_writes_and_repairs_it_once(
    tmp_path: Path,
) -> None:
    tasks = _one_task(tmp_path, "sql-001-customers_at_branch", TASKS / "sql-test-s1000-n22.json")
    query = (
        "SELECT COUNT(*) FROM customers c JOIN branches b ON b.id = c.branch_id "
        "WHERE b.name = 'Hoan Kiem'"
    )

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "run_sql" in offered(body):
            wrote = "SELECT nope FROM customers" if "failed" not in last_user(body) else query
            return calls(("q", "run_sql", json.dumps({"query": wrote})))
        if "verdict" in offered(body):
            return calls(("v", "verdict", json.dumps({"decision": "accept"})))
        return answer("The branch has 6 customers.")

    records, seen = await _eval(
        tmp_path,
        "evaluate-optimize",
        reply,
        tasks,
        preset=preset("analyst"),
        loop=eval_loop(max_turns=8),
    )
    (record,) = records
    assert record.tools_called == ["describe", "run_sql", "run_sql", "verdict"]
    assert isinstance(record.environment, DatabaseData)
    assert [a["error"] is not None for a in record.environment.audit or []] == [True, False]
    assert record.environment.database == "sqlite" and record.correct, (
        record.answer,
        record.checks,
    )
    assert [offered(b) for b in seen] == [["run_sql"], ["run_sql"], [], ["verdict"]]
    chain, _ = await _eval(tmp_path / "chain", "chain", reply, tasks, preset=preset("analyst"))
    assert chain[0].tools_called == ["describe", "run_sql"] and not chain[0].correct


async def test_a_workflow_stops_at_the_turn_limit_as_the_loop_does(tmp_path: Path) -> None:
    records, seen = await _eval(
        tmp_path, "vote", lambda b: answer("errors.log"), _one_task(tmp_path, "largest"),
        loop=eval_loop(max_turns=2),
    )  # fmt: skip
    (record,) = records
    assert record.status == "max_turns_exceeded" and len(seen) == 2 and not record.correct


async def test_every_record_names_its_solver_and_an_unknown_one_is_refused(
    tmp_path: Path,
) -> None:
    records, _ = await _eval(
        tmp_path, "agent", lambda b: answer("errors.log"), _one_task(tmp_path, "largest")
    )
    assert records[0].spec.solver == "agent" and records[0].spec.solver_settings == {}
    assert set(SOLVERS) == {"agent", "chain", "route", "vote", "evaluate-optimize"}
    with pytest.raises(EvalError, match="no solver 'tree'; the solvers are: agent, chain"):
        solver_named("tree")
    # Records from before solvers existed read as the agent's.
    line = records[0].line()
    spec = {k: v for k, v in line.pop("spec").items() if k not in ("solver", "solver_settings")}
    spec["policy"] = spec.pop("preset")  # its name before version 4
    old = {**line, **spec, "record_version": 2}
    del old["environment"]
    assert parse(old, "old").spec.solver == "agent"


async def test_the_workflows_report_pairs_the_best_workflow_with_the_best_agent_run(
    tmp_path: Path,
) -> None:
    from lab.report.workflows import report

    tasks = TASKS / "files6.json"
    runs = [(await _eval(tmp_path / s, s, _largest, tasks))[0] for s in ("agent", "chain", "route")]
    assert [sum(r.correct for r in rs) for rs in runs] == [
        0,
        2,
        2,
    ]  # a fixed answer, right on two tasks once the code has read
    text = report([tmp_path / s / f"{s}.jsonl" for s in ("agent", "chain", "route")])
    assert "## files6" in text
    rows = [line for line in text.splitlines() if line.startswith("| `fake`")]
    # Workflows first, most accurate then fewest model calls: chain (1 call) before route (2).
    assert [r.split("|")[2].strip() for r in rows] == [
        "**chain**",
        "route",
        "**agent (no-helpers)**",
    ]
    assert "chain against agent (no-helpers): no difference detected" in text


async def test_resume_refuses_records_made_under_another_solver(tmp_path: Path) -> None:
    from evals.run.resume import refuse_changed_setup

    records, _ = await _eval(tmp_path, "chain", _largest, _one_task(tmp_path, "largest"))
    spec = records[0].spec
    refuse_changed_setup(tmp_path / "chain.jsonl", records, spec)  # the same: goes on
    with pytest.raises(EvalError, match="made with solver 'chain', and this run would use 'vote'"):
        voting = spec.model_copy(update={"solver": "vote"})
        refuse_changed_setup(tmp_path / "chain.jsonl", records, voting)
