"""The sql source on SQLite: the read-only database, the tools through the loop, the generated
task sets, typed answers and evidence, the oracle, and the adversaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.database.data import DatabaseData
from evals.database.fields import DatabaseRef
from evals.database.figures import audit
from evals.database.sql import tasks as sql_tasks
from evals.database.sql import write
from evals.database.sql.bank import generate
from evals.database.sql.build import sqlite_file
from evals.database.sql.questions import gold_for
from evals.record import kept_at, read_runs
from evals.report.summary import summarize_run_file
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.scoring.answers import commitment, credits
from evals.tasks import ListOf, NumberIs, ObservedValue, load_tasks
from harness.config import LoopConfig
from harness.loop import run_loop
from harness.policies.query_before_answer import QUERY_FIRST
from harness.presets import apply, preset
from harness.setup import Setup
from harness.sql import SQLError, open_database, sql_tools
from harness.state import RunState, new_run
from harness.workspace import create_workspace
from lab.studies.strategies import judge
from tests.fake_provider import answer, by_turn, calls, fake_client
from tests.sql_cases import COUNTS, NEVER_ENDS, SQLITE_WRITES

TASKS = Path("evals/tasks")
COMMITTED = {"sql-test-s1000-n60.json": (1000, 60, "test"), "sql-dev-s0-n30.json": (0, 30, "dev")}


@pytest.fixture(scope="module")
def bank_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sqlite_file(1000, tmp_path_factory.mktemp("bank"))


@pytest.mark.parametrize("statement", SQLITE_WRITES)
def test_a_write_is_refused_by_sqlite_and_changes_nothing(bank_file: Path, statement: str) -> None:
    db = open_database(str(bank_file))
    before = db.query(COUNTS, 5, 1).rows
    digest = bank_file.read_bytes()
    with pytest.raises(SQLError) as refused:
        db.query(statement, 5, 10)
    assert refused.value.refused_write, str(refused.value)
    # Whatever the statement tried, the next ones still cannot write.
    with pytest.raises(SQLError):
        db.query("DELETE FROM branches", 5, 10)
    assert db.query(COUNTS, 5, 1).rows == before
    assert bank_file.read_bytes() == digest


def test_the_file_itself_is_opened_read_only(bank_file: Path) -> None:
    """Without the authorizer, SQLite's own read-only mode still refuses the write."""
    db = open_database(str(bank_file))
    conn = db.connect()  # type: ignore[attr-defined]
    conn.set_authorizer(None)
    conn.execute("PRAGMA query_only = OFF")
    with pytest.raises(Exception, match="readonly"):
        conn.execute("DELETE FROM transactions")
    conn.close()


def test_a_statement_that_never_ends_is_stopped(bank_file: Path) -> None:
    db = open_database(str(bank_file))
    with pytest.raises(SQLError) as stopped:
        db.query(NEVER_ENDS, 0.3, 10)
    assert stopped.value.timed_out
    assert "statement timeout" in str(stopped.value)
    assert db.query("SELECT COUNT(*) FROM branches", 5, 1).rows == [(5,)]


def test_the_row_cap_says_how_many_rows_were_cut(bank_file: Path) -> None:
    from harness.sql.tools import render

    db = open_database(str(bank_file))
    result = db.query("SELECT * FROM customers", 5, 7)
    assert (len(result.rows), result.total, result.cut) == (7, 30, 23)
    text = render(result)
    assert text.splitlines()[0] == "id | name | branch_id | joined_on"
    assert "(30 rows; showing the first 7, 23 cut" in text


def test_hints_name_what_exists(bank_file: Path) -> None:
    db = open_database(str(bank_file))
    with pytest.raises(SQLError) as column:
        db.query("SELECT customer_name FROM transactions", 5, 5)
    assert str(column.value) == "no such column: customer_name"
    assert column.value.hint and "customers.name" in column.value.hint
    assert "JOIN" in column.value.hint
    with pytest.raises(SQLError) as table:
        db.query("SELECT * FROM customer", 5, 5)
    assert table.value.hint and "customers" in table.value.hint


async def _loop_over(bank_file: Path, tmp_path: Path, **policy: object) -> list[str]:
    """A run whose first turn sends a statement that never ends and one with an unknown
    column, in parallel; the second turn answers. Returns what the model read."""
    unknown = json.dumps({"query": "SELECT customer_name FROM transactions"})
    first = calls(("c1", "run_sql", json.dumps({"query": NEVER_ENDS})), ("c2", "run_sql", unknown))
    handler = by_turn([(200, first), (200, answer("I could not find out."))])
    state = new_run("fake", "Who?")
    config = LoopConfig.of(max_turns=4, statement_timeout_s=0.3, **policy)
    tools = sql_tools(open_database(str(bank_file)))
    async with fake_client(handler) as client:
        await run_loop(
            state, client, Setup(tools, create_workspace(tmp_path / "w", files={})), config
        )
    assert state.status == "completed"  # the timeout ended the statement, not the run
    timed = [r for r in state.tool_log if r.facts and r.facts["timed_out"]]
    assert [r.call_id for r in timed] == ["c1"]
    assert state.tool_log[1].facts and state.tool_log[1].facts["error"]
    return [str(m["content"]) for m in state.messages if m["role"] == "tool"]


async def test_hinted_and_plain_errors_through_the_loop(bank_file: Path, tmp_path: Path) -> None:
    hinted = await _loop_over(bank_file, tmp_path / "h", error_hints="hinted")
    plain = await _loop_over(bank_file, tmp_path / "p", error_hints="plain")
    assert "statement timeout" in hinted[0] and "statement timeout" in plain[0]
    assert hinted[1].startswith("Error: no such column: customer_name Hint: ")
    assert "customers.name" in hinted[1]
    assert plain[1] == "Error: no such column: customer_name"


def test_generation_is_a_function_of_the_seed(tmp_path: Path) -> None:
    one, _ = write(7, 20, tmp_path / "a.json")
    two, _ = write(7, 20, tmp_path / "b.json")
    assert one.read_bytes() == two.read_bytes()
    assert generate(7).fingerprint == generate(7).fingerprint != generate(8).fingerprint
    assert load_tasks(one).tasks[0].fields_of(DatabaseRef) is not None


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_committed_sets_are_what_the_generator_writes(name: str, tmp_path: Path) -> None:
    seed, n, split = COMMITTED[name]
    out, _ = write(seed, n, tmp_path / name, split)
    assert out.read_text() == (TASKS / name).read_text()


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_every_expected_answer_is_what_its_gold_sql_returns(
    name: str, bank_file: Path, tmp_path: Path
) -> None:
    taskset = load_tasks(TASKS / name)
    seed = COMMITTED[name][0]
    db = open_database(str(sqlite_file(seed, tmp_path)))
    kinds = {t.kind for t in taskset.tasks}
    assert len(kinds) >= 8 and len(taskset.tasks) == COMMITTED[name][1]
    for task in taskset.tasks:
        gold = gold_for(task.question)
        assert gold is not None, task.question
        sql, shape, take = gold
        rows = db.query(sql, 30, take).rows
        expected = task.answer
        if shape == "number":
            assert isinstance(expected, NumberIs)
            assert round(float(rows[0][0]), 2) == expected.expected
            others = [c for c in expected.candidates if c != expected.expected]
            assert all(abs(c - expected.expected) > 2 * expected.tolerance for c in others)
        elif shape == "names":
            assert isinstance(expected, ListOf)
            assert [r[0] for r in rows] == expected.expected
        else:
            assert expected is not None and rows[0][0] == expected.expected


@pytest.mark.parametrize(
    ("text", "credited"),
    [
        ("The total is 49,402.51 EUR.", True),
        ("The total is 49402.51.", True),
        ("About 49402.5.", True),  # within the stated tolerance of 0.01
        ("About 49,400.", False),
        ("It is 49402.51 or 50000.", False),
        ("Either 49402.51 or 31000.2.", False),
    ],
)
def test_numbers_are_read_within_their_tolerance(text: str, credited: bool) -> None:
    answer = NumberIs(
        kind="answer", type="number", expected=49402.51, candidates=[49402.51, 31000.2, 50000.0],
        tolerance=0.01,
    )  # fmt: skip
    assert credits(answer, text) is credited, commitment(answer, text)


@pytest.mark.parametrize(
    ("text", "credited"),
    [
        ("Hai Ho, Loan Nguyen and Dung Phan.", True),
        ("The busiest were Dung Phan (14), Hai Ho (12) and Loan Nguyen (11).", True),
        ("Hai Ho and Loan Nguyen.", False),  # one missing
        ("Hai Ho, Loan Nguyen, Dung Phan and Tam Le.", False),  # one too many
        ("Hai Ho, Loan Nguyen or Dung Phan.", False),  # a hedge
        ("Hai Ho, Loan Nguyen and Dung Phan; not Tam Le.", True),  # a denial is no claim
    ],
)
def test_a_list_answer_names_every_expected_one_and_no_other(text: str, credited: bool) -> None:
    answer = ListOf(
        kind="answer", type="list", expected=["Hai Ho", "Loan Nguyen", "Dung Phan"],
        candidates=["Hai Ho", "Loan Nguyen", "Dung Phan", "Tam Le", "Lan Phan"],
    )  # fmt: skip
    assert credits(answer, text) is credited, commitment(answer, text)


class _Results:
    def __init__(self, results: list[str]) -> None:
        self._results = results

    def results(self, tool: str) -> list[str]:
        return self._results if tool == "run_sql" else []


def test_observed_value_needs_the_value_in_a_result_received() -> None:
    check = ObservedValue(kind="observed_value", tool="run_sql", number=523.46, tolerance=0.01)
    assert check.passes(_Results(["avg\n523.456667\n(1 row)"]))  # type: ignore[arg-type]
    assert not check.passes(_Results(["avg\n524\n(1 row)"]))  # type: ignore[arg-type]
    assert not check.passes(_Results([]))  # type: ignore[arg-type]
    names = ObservedValue(kind="observed_value", tool="run_sql", texts=["Hai Ho"])
    assert names.passes(_Results(["name | n\nHai Ho | 3\n(1 row)"]))  # type: ignore[arg-type]
    assert not names.passes(_Results(["name | n\nHai Hoang | 3\n(1 row)"]))  # type: ignore[arg-type]


def test_the_analyst_preset_is_the_chapters_loop() -> None:
    analyst = preset("analyst").settings
    assert analyst["parallel_tool_calls"] and analyst["conclude_on_limit"]
    assert analyst["statement_timeout_s"] == 15.0 and analyst["error_hints"] == "hinted"
    assert preset("analyst").limits == {"max_turns": 8, "timeout_s": 90}
    assert preset("no-helpers").limits == {}
    # A flag beside the preset keeps its limits.
    assert preset("analyst").overriding({"dedupe": True}).limits == preset("analyst").limits
    # analyst-schema is analyst with the schema shown, and nothing else changed
    schema = preset("analyst-schema").settings
    assert {k for k in schema if schema[k] != analyst[k]} == {"overview_in_prompt"}
    assert preset("analyst-schema").limits == preset("analyst").limits


SCHEMA_LINE = (
    "transactions(id integer, account_id integer -> accounts.id, ts timestamp, "
    "amount numeric(14,2), kind text)"
)


@pytest.mark.parametrize("policy", ["analyst", "analyst-schema"])
async def test_analyst_schema_puts_the_schema_describe_lists_in_the_system_prompt(
    scripted_url: str, bank_file: Path, tmp_path: Path, policy: str
) -> None:
    """Under ``overview_in_prompt`` (the ``analyst-schema`` preset) the system prompt every turn
    shares ends with the tables exactly as describe lists them; under ``analyst`` it names
    the tables only. The oracle still answers, and the setting is in the record."""
    tasks, _ = write(1000, 3, tmp_path / "s.json", "test")
    settings = EvalSettings(
        serving=Serving(scripted_url, model="scripted:oracle"),
        tasks=tasks,
        preset=preset(policy),
        out=tmp_path / "r.jsonl",
        loop=eval_loop(max_turns=8),
    )  # fmt: skip
    records = read_runs(await run_eval(settings, echo=lambda _: None))
    assert len(records) == 3 and all(r.correct for r in records)
    described = await _describe(bank_file, tmp_path)
    for r in records:
        trace_file = kept_at(tmp_path / "r.jsonl", str(r.trace_path))
        state = json.loads(trace_file.with_name(f"{r.run_id}.json").read_text())
        system = state["messages"][0]
        assert system["role"] == "system" and "read-only SQLite database" in system["content"]
        shown = policy == "analyst-schema"
        assert system["content"].endswith(described) is shown
        assert (SCHEMA_LINE in system["content"]) is shown
        assert r.spec.preset is not None
        assert r.spec.preset.settings["overview_in_prompt"] is shown


async def _describe(bank_file: Path, tmp_path: Path) -> str:
    """What the describe tool returns, through the loop."""
    handler = by_turn([(200, calls(("d", "describe", "{}"))), (200, answer("done"))])
    state = new_run("fake", "Which tables?")
    tools = sql_tools(open_database(str(bank_file)))
    async with fake_client(handler) as client:
        await run_loop(state, client, Setup(tools, create_workspace(tmp_path / "d", files={})))
    (result,) = [str(m["content"]) for m in state.messages if m["role"] == "tool"]
    assert SCHEMA_LINE in result
    return result


def test_the_overview_setting_adds_nothing_where_the_task_gives_none(tmp_path: Path) -> None:
    from harness.hooks import system_prompt

    on = LoopConfig.of(overview_in_prompt=True)
    files = Setup([], create_workspace(tmp_path / "files"))
    assert system_prompt(on, files) == system_prompt(LoopConfig(), files) == system_prompt(on)
    table = Setup([], create_workspace(tmp_path / "table"), overview="T(a int)")
    assert system_prompt(on, table).endswith("\n\nT(a int)")
    assert "T(a int)" not in system_prompt(LoopConfig(), table)


async def test_the_oracle_answers_every_question_on_sqlite(
    scripted_url: str, tmp_path: Path
) -> None:
    settings = EvalSettings(
        serving=Serving(scripted_url, model="scripted:oracle", concurrency=4),
        tasks=TASKS / "sql-test-s1000-n60.json",
        preset=preset("analyst"),
        out=tmp_path / "oracle.jsonl",
        loop=eval_loop(max_turns=8),
    )  # fmt: skip
    out = await run_eval(settings, echo=lambda _: None, summarize=summarize_run_file)
    records = read_runs(out)
    assert len(records) == 60 and all(r.correct for r in records), [
        (r.task_id, r.answer) for r in records if not r.correct
    ]
    audits = [audit(r) for r in records]
    assert all(
        r.environment == DatabaseData(database="sqlite", audit=a)
        for r, a in zip(records, audits, strict=True)
    )
    assert all(a and a[0]["rows"] for a in audits)
    # The audit record is in the trace too, with the call it belongs to.
    trace_file = kept_at(tmp_path / "r.jsonl", str(records[0].trace_path))
    trace = [json.loads(line) for line in trace_file.read_text().splitlines()]
    (result,) = [e for e in trace if e["type"] == "tool_result"]
    assert result["facts"]["sql"] == audits[0][0]["sql"]
    assert result["facts"]["rows"] == 1 and result["facts"]["error"] is None
    summary = json.loads((tmp_path / "oracle.summary.json").read_text())
    assert summary["analyst"]["questions"] == 60
    assert summary["analyst"]["questions_with_error"] == 0


async def test_adversaries_stay_at_or_below_chance(tmp_path: Path) -> None:
    """Every strategy derived from the set's own answers and results (constants, the first
    number or name of any result, hedges, every candidate, every result echoed), after the
    evidence is there: no hedge credited, no false credit, none clearly above chance."""
    reports = await judge(sql_tasks(1000, 24, "test"), tmp_path)
    problems = [p for r in reports for p in r.problems()]
    assert not problems
    cells = {c.strategy for r in reports for c in r.cells.values()}
    assert {"first number of any result", "first name of any result"} <= cells
    assert "echo everything read" in cells


def _audit(turn: int, error: str | None = None, timed_out: bool = False) -> dict[str, object]:
    return {
        "turn": turn,
        "sql": "SELECT 1",
        "ms": 1.0,
        "rows": None if error else 1,
        "cut": 0,
        "error": error,
        "timed_out": timed_out,
        "refused_write": False,
    }


def test_the_analysts_figures_count_errors_recoveries_and_timeouts() -> None:
    from evals.database.figures import figures, markdown
    from tests.helpers import run_record

    loop = {"max_turns": 8}
    records = [
        # an error, then a statement that succeeds on the next step: recovered
        run_record(
            task_id="a",
            turns=3,
            correct=True,
            loop=loop,
            audit=[_audit(1, "no such column: x"), _audit(2)],
        ),
        # an error, then nothing that succeeds on the next step (a later one does)
        run_record(
            task_id="b", turns=4, loop=loop, audit=[_audit(1, "no such column: x"), _audit(3)]
        ),
        # a timeout is counted apart, not as an SQL error
        run_record(task_id="c", turns=2, loop=loop, audit=[_audit(1, "late", timed_out=True)]),
        # two calls in one turn, no error; the cap reached
        run_record(
            task_id="d",
            turns=9,
            status="max_turns_exceeded",
            loop=loop,
            audit=[_audit(1), _audit(1)],
        ),
        # a file task: no audit, not an sql run
        run_record(task_id="e", turns=2),
        # the machinery failed: an error, in no figure
        run_record(task_id="f", turns=1, status="error", audit=[_audit(1, "x")]),
    ]
    f = figures(records)
    assert f is not None
    assert (f["questions"], f["correct"]) == (4, 1)
    assert (f["questions_with_error"], f["recovered_next_step"]) == (2, 1)
    assert (f["statement_timeouts"], f["cap_reached"], f["parallel_turns"]) == (1, 1, 1)
    assert f["steps"] == {"2": 1, "3": 1, "4": 1, "9": 1}
    table = markdown(f)
    assert "| of those, recovered on the next step | about 9 in 10 | 1/2 |" in table
    assert figures([run_record(task_id="e", turns=2)]) is None


def test_sql_report_and_generate_commands(scripted_url: str, tmp_path: Path) -> None:
    from evals.cli import main
    from lab.cli import main as lab_main

    assert (
        main(
            [
                "generate",
                "--source",
                "sql",
                "--seed",
                "3",
                "--n",
                "12",
                "--out",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    taskset = load_tasks(tmp_path / "s.json")
    assert taskset.name == "sql-s3-n12" and {
        r.seed for r in (t.fields_of(DatabaseRef) for t in taskset.tasks) if r
    } == {3}
    run = tmp_path / "r.jsonl"
    assert (
        main(
            [
                "run",
                "--base-url",
                scripted_url,
                "--model",
                "scripted:oracle",
                "--policy",
                "analyst",
                "--tasks",
                str(tmp_path / "s.json"),
                "--out",
                str(run),
            ]
        )
        == 0
    )
    assert {r.spec.loop and r.spec.loop["max_turns"] for r in read_runs(run)} == {
        8
    }  # the preset's limit
    # The SQL tools' limits are the database's settings: its records keep them.
    assert all(
        r.spec.preset and {"row_cap", "statement_timeout_s"} <= set(r.spec.preset.settings)
        for r in read_runs(run)
    )
    out = tmp_path / "summary.md"
    assert lab_main(["sql-report", str(run), "--pair", str(run), str(run), "--out", str(out)]) == 0
    text = out.read_text()
    assert "12/12" in text and "no difference detected" in text and "about 15 %" in text


@pytest.mark.parametrize(
    ("url", "public"),
    [
        ("postgresql://u:secret@127.0.0.1:5432/db", "postgresql://u@127.0.0.1:5432/db"),
        ("postgresql://u@127.0.0.1/db", "postgresql://u@127.0.0.1/db"),
        ("postgresql://u@h/db?password=secret&sslmode=off", "postgresql://u@h/db?sslmode=off"),
        ("postgresql://:secret@h/db?PASSWORD=secret", "postgresql://h/db"),
        ("host=h user=u password=secret dbname=db", "host=h user=u password=*** dbname=db"),
        ("host=h password = 'se cret' dbname=db", "host=h password = *** dbname=db"),
    ],
)
def test_a_database_url_is_recorded_without_its_password(url: str, public: str) -> None:
    from harness.sql.postgres import public_url

    assert public_url(url) == public
    assert "secret" not in public_url(url)


def test_no_password_given_with_db_reaches_a_file_or_the_terminal(
    scripted_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--db`` with a password in both URL forms, at a server that is not there: the eval
    stops, and neither its files nor what it printed hold the password."""
    from evals.cli import main

    out = tmp_path / "run.jsonl"
    url = "postgresql://u:hunter2@127.0.0.1:1/db?password=hunter3"
    code = main(
        ["run", "--tasks", str(TASKS / "sql-dev-s0-n30.json"), "--policy", "analyst",
         "--model", "scripted:oracle", "--base-url", scripted_url, "--db", url,
         "--out", str(out)]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code != 0 and "127.0.0.1:1/db" in printed.err + printed.out
    assert "hunter" not in printed.err + printed.out
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "eval.json" for p in written)
    assert [p for p in written if b"hunter" in p.read_bytes()] == []
    saved = json.loads(next(p for p in written if p.name == "eval.json").read_text())
    assert saved["db"] == "postgresql://u@127.0.0.1:1/db"


BAD_QUERY = json.dumps({"query": "SELECT SUM(amount) FROM transactions WHERE currency = 'EUR'"})
GOOD_QUERY = json.dumps(
    {
        "query": "SELECT SUM(t.amount) FROM transactions t JOIN accounts a "
        "ON a.id = t.account_id WHERE a.currency = 'EUR'"
    }
)


async def _query_first(
    bank_file: Path, tmp_path: Path, replies: list[dict[str, Any]], question: str = "How much?"
) -> tuple[list[dict[str, Any]], RunState]:
    from tests.test_policies import recording

    seen, client = recording(replies)
    config = apply(LoopConfig.of(max_turns=8), preset("analyst-query-first"))
    tools = sql_tools(open_database(str(bank_file)))
    state = new_run("fake", question)
    async with client:
        await run_loop(
            state, client, Setup(tools, create_workspace(tmp_path / "w", files={})), config
        )
    return seen, state


async def test_an_answer_before_any_query_succeeded_is_met_once_with_run_sql_required(
    bank_file: Path, tmp_path: Path
) -> None:
    """query_before_answer: the failed query, the look at the schema, then a figure in prose:
    the loop asks, once, for the query to be run, and the next reply must call run_sql."""
    replies = [
        calls(("a", "run_sql", BAD_QUERY)),  # no such column: currency
        calls(("b", "describe", "{}")),
        answer("The total is 1234.56."),  # a figure no query returned
        calls(("c", "run_sql", GOOD_QUERY)),
        answer("The total is the sum the query returned."),
    ]
    seen, state = await _query_first(bank_file, tmp_path, replies)
    assert state.status == "completed"
    assert state.answer == "The total is the sum the query returned."
    asked = [a.hook for a in state.asks]
    assert asked == ["query_before_answer"]
    request = seen[3]["messages"][-1]
    assert request["role"] == "user" and request["content"].startswith("None of your queries")
    assert request["content"].endswith(": How much?")
    forced = {"type": "function", "function": {"name": "run_sql"}}
    assert [b.get("tool_choice") for b in seen] == ["required", "required", None, forced, None]


async def test_the_request_to_query_is_made_once_and_never_after_a_query_succeeded(
    bank_file: Path, tmp_path: Path
) -> None:
    # A failed query is no query: asked once; the second answer without one stands.
    replies = [calls(("a", "run_sql", BAD_QUERY)), answer("x"), calls(("b", "run_sql", BAD_QUERY))]
    replies += [answer("y")]
    seen, state = await _query_first(bank_file, tmp_path / "once", replies)
    assert [a.hook for a in state.asks] == ["query_before_answer"]
    assert state.answer == "y"
    # A query that succeeded came first: the answer stands.
    seen, state = await _query_first(
        bank_file, tmp_path / "ok", [calls(("a", "run_sql", GOOD_QUERY)), answer("z")]
    )
    assert (len(seen), state.answer, state.asks) == (2, "z", [])
    # A question worded as the request changes nothing: the request is the run's typed ask.
    worded = QUERY_FIRST.format(question="q")
    seen, state = await _query_first(
        bank_file, tmp_path / "w", [calls(("a", "run_sql", GOOD_QUERY)), answer("z")], worded
    )
    assert (len(seen), state.answer, state.asks) == (2, "z", [])


# --- SQLite bounded by the database (hardening) -----------------------------------------------


def test_a_value_longer_than_the_length_limit_is_refused_by_sqlite(bank_file: Path) -> None:
    """One call of randomblob is one step of SQLite's machine: the timeout's progress handler
    never sees it, so SQLITE_LIMIT_LENGTH is what bounds it."""
    from harness.sql.sqlite import MAX_VALUE_BYTES

    db = open_database(str(bank_file))
    for sql in ("SELECT randomblob(50000000)", "SELECT hex(zeroblob(600000))"):
        with pytest.raises(SQLError) as refused:
            db.query(sql, 60, 10)
        assert "too big" in str(refused.value) and str(MAX_VALUE_BYTES) in str(refused.value)
        assert not refused.value.timed_out


async def test_long_cells_are_cut_and_blobs_shown_by_size(bank_file: Path, tmp_path: Path) -> None:
    from harness.sql.database import CELL_CAP_CHARS
    from harness.tools import ToolContext

    (run_sql, _) = sql_tools(open_database(str(bank_file)))
    ctx = ToolContext(workspace=create_workspace(tmp_path / "ws", files={}))
    text = await run_sql.run(
        {"query": "SELECT printf('%.*c', 900000, 'x') AS long, randomblob(4096) AS raw"}, ctx
    )
    header, row, count = text.splitlines()
    assert header == "long | raw" and count == "(1 row)"
    assert row == "x" * CELL_CAP_CHARS + "[... cut: 900000 characters] | <blob of 4096 bytes>"


@pytest.mark.parametrize(
    "sql", ["SELECT fts3_tokenizer('simple')", "SELECT FTS3_Tokenizer('porter')"]
)
def test_a_function_that_returns_a_pointer_is_refused(bank_file: Path, sql: str) -> None:
    db = open_database(str(bank_file))
    with pytest.raises(SQLError, match=r"not authorized to use function.*refused here"):
        db.query(sql, 5, 10)


@pytest.mark.parametrize("statement", ["REINDEX", "REINDEX accounts", "ANALYZE"])
def test_maintenance_that_rewrites_the_file_is_refused_by_the_authorizer(
    bank_file: Path, tmp_path: Path, statement: str
) -> None:
    """Refused by the authorizer (the database's access control, "not authorized"), not only
    by the file's read-only mode, on a bank that has an index: REINDEX on a table without one
    is a no-op, which SQLite never puts to the authorizer."""
    import shutil
    import sqlite3

    indexed = tmp_path / "indexed.sqlite"
    shutil.copy(bank_file, indexed)
    with sqlite3.connect(indexed) as conn:
        conn.execute("CREATE INDEX accounts_by_customer ON accounts(customer_id)")
    conn.close()
    digest = indexed.read_bytes()
    with pytest.raises(SQLError) as refused:
        open_database(str(indexed)).query(statement, 5, 10)
    assert refused.value.refused_write and "not authorized" in str(refused.value)
    assert indexed.read_bytes() == digest


@pytest.mark.parametrize("statement", ["REINDEX", "REINDEX accounts", "BEGIN", "SAVEPOINT a"])
def test_a_statement_that_is_not_a_query_is_refused_on_a_bank_without_an_index(
    bank_file: Path, statement: str
) -> None:
    """REINDEX on a bank without an index asks the authorizer nothing; it is refused by its
    kind (it asked to read nothing), as PostgreSQL's tool refuses any statement not a query."""
    with pytest.raises(SQLError) as refused:
        open_database(str(bank_file)).query(statement, 5, 10)
    assert refused.value.refused_write, str(refused.value)


@pytest.mark.parametrize(
    ("statement", "rows"),
    [
        ("SELECT 1", [(1,)]),
        ("VALUES (1), (2)", [(1,), (2,)]),
        ("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) "
         "SELECT x FROM n", [(1,), (2,), (3,)]),
    ],
)  # fmt: skip
def test_every_kind_of_query_still_reads(
    bank_file: Path, statement: str, rows: list[tuple[object, ...]]
) -> None:
    assert open_database(str(bank_file)).query(statement, 5, 10).rows == rows
    assert open_database(str(bank_file)).query("PRAGMA table_info(branches)", 5, 10).total >= 3


def test_wide_rows_of_long_values_are_cut_as_they_are_fetched(bank_file: Path) -> None:
    """Five 1 MB blobs a row, 20 rows kept: the result holds cells of their sizes, not 100 MB,
    and says how many rows it could not keep within its byte budget."""
    import tracemalloc

    from harness.sql.tools import render

    sql = (
        "SELECT randomblob(1000000), randomblob(1000000), randomblob(1000000), "
        "randomblob(1000000), hex(randomblob(400000)) FROM transactions LIMIT 30"
    )
    db = open_database(str(bank_file))
    tracemalloc.start()
    result = db.query(sql, 30, 20)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.total == 30 and len(result.rows) == 20
    assert peak < 20_000_000, peak  # one row in flight (5.8 MB), never the twenty kept
    text = render(result)
    assert "<blob of 1000000 bytes>" in text and "[... cut: 800000 characters]" in text
    assert len(text) < 100_000
    wide = db.query(
        "SELECT " + ", ".join(["hex(randomblob(600))"] * 60) + " FROM transactions", 30, 200
    )
    assert wide.total > len(wide.rows) and "more than 256 KB" in render(wide)
    with pytest.raises(SQLError, match="too many columns"):
        db.query("SELECT " + ", ".join(["1"] * 65), 5, 10)
