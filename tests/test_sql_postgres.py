"""The sql source on a real PostgreSQL (Debian's, started for these tests as the postgres
user, on a free port, data in a folder of its own, stopped at the end)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.commands.databases import load_banks
from evals.database import postgres
from evals.database.environment import Databases
from evals.database.sql.build import check_postgres, sqlite_file
from evals.database.sql.questions import gold_for
from evals.errors import EvalError
from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.tasks import load_tasks
from harness.presets import preset
from harness.sql import SQLError, open_database
from harness.sql.tools import render
from tests.sql_cases import COUNTS, NEVER_ENDS, POSTGRES_WRITES

pytestmark = pytest.mark.slow
TASKS = Path("evals/tasks")
SETS = {"sql-test-s1000-n60.json": 1000, "sql-dev-s0-n30.json": 0}


@pytest.fixture(scope="module")
def server() -> Iterator[postgres.Server]:
    # Under /tmp itself: the postgres user must reach the folder, and pytest's own temporary
    # folders are private to root.
    root = Path(tempfile.mkdtemp(prefix="loopbench-pg-"))
    try:
        try:
            started = postgres.start(root)
        except EvalError as exc:
            pytest.skip(f"no PostgreSQL: {exc}")
        load_banks(started, sorted(SETS.values()))
        yield started
    finally:
        postgres.stop(root)
        shutil.rmtree(root, ignore_errors=True)


def _db(server: postgres.Server, seed: int = 1000) -> object:
    return open_database(server.url(), f"bank_s{seed}")


@pytest.mark.parametrize("statement", POSTGRES_WRITES)
def test_a_write_is_refused_by_postgres_and_changes_nothing(
    server: postgres.Server, statement: str
) -> None:
    db = open_database(server.url(), "bank_s1000")
    before = db.query(COUNTS, 5, 1).rows
    with pytest.raises(SQLError) as refused:
        db.query(statement, 5, 10)
    # One command at a time: what would follow a COMMIT never runs.
    several = "multiple commands" in str(refused.value)
    assert refused.value.refused_write or (";" in statement and several), str(refused.value)
    assert db.query(COUNTS, 5, 1).rows == before


def test_the_reader_role_cannot_write_even_outside_a_read_only_transaction(
    server: postgres.Server,
) -> None:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM bank_s1000.transactions")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE bank_s1000.notes (x INTEGER)")


@pytest.mark.parametrize("statement", [NEVER_ENDS, "SELECT pg_sleep(600)"])
def test_a_statement_that_never_ends_is_stopped(server: postgres.Server, statement: str) -> None:
    db = open_database(server.url(), "bank_s1000")
    with pytest.raises(SQLError) as stopped:
        db.query(statement, 0.3, 10)
    assert stopped.value.timed_out
    assert db.query("SELECT COUNT(*) FROM branches", 5, 1).rows == [(5,)]


def test_hints_name_what_exists(server: postgres.Server) -> None:
    db = open_database(server.url(), "bank_s1000")
    with pytest.raises(SQLError) as column:
        db.query("SELECT customer_name FROM transactions", 5, 5)
    assert str(column.value) == 'column "customer_name" does not exist'
    assert column.value.hint and "customers.name" in column.value.hint


@pytest.mark.parametrize("name", sorted(SETS))
def test_both_databases_give_every_gold_answer_identically(
    server: postgres.Server, name: str, tmp_path: Path
) -> None:
    seed = SETS[name]
    lite = open_database(str(sqlite_file(seed, tmp_path)))
    pg = open_database(server.url(), f"bank_s{seed}")
    assert [t.line() for t in lite.tables()] == [t.line() for t in pg.tables()]
    for task in load_tasks(TASKS / name).tasks:
        gold = gold_for(task.question)
        assert gold is not None
        sql, shape, _ = gold
        a, b = lite.query(sql, 30, 100), pg.query(sql, 30, 100)
        first = [render(a).splitlines()[1:], render(b).splitlines()[1:]]
        if shape == "number":
            assert first[0] == first[1], task.id
        else:  # names: the same names with the same scores (ties may come in either order)
            assert sorted(first[0]) == sorted(first[1]), task.id


async def test_the_oracle_answers_every_question_on_postgres(
    server: postgres.Server, scripted_url: str, tmp_path: Path
) -> None:
    settings = EvalSettings(
        serving=Serving(scripted_url, model="scripted:oracle", concurrency=4),
        tasks=TASKS / "sql-test-s1000-n60.json",
        preset=preset("analyst"),
        out=tmp_path / "oracle.jsonl",
        db=server.url(),
        loop=eval_loop(max_turns=8),
    )  # fmt: skip
    records = read_runs(await run_eval(settings, echo=lambda _: None))
    assert len(records) == 60 and all(r.correct for r in records), [
        (r.task_id, r.answer) for r in records if not r.correct
    ]
    assert {r.environment.model_dump().get("database") for r in records} == {server.url()}


def test_a_bank_not_loaded_is_a_clear_error(server: postgres.Server, tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="load-db --seed 5"):
        check_postgres(server.url(), 5, "0123456789abcdef")
    with pytest.raises(EvalError, match="postgresql:// URL"):
        Databases("mysql://somewhere", tmp_path)


# --- A role that can only read, found out on connect; memory bounded by the server ------------

PRIVILEGED = {
    "lb_super": ("CREATE ROLE lb_super LOGIN SUPERUSER", "superuser"),
    "lb_files": ("CREATE ROLE lb_files LOGIN IN ROLE pg_read_server_files", "pg_read_server_files"),
    "lb_program": (
        "CREATE ROLE lb_program LOGIN IN ROLE pg_execute_server_program",
        "pg_execute_server_program",
    ),
    "lb_writer": (
        "CREATE ROLE lb_writer LOGIN; GRANT USAGE ON SCHEMA bank_s1000 TO lb_writer; "
        "GRANT SELECT, INSERT ON bank_s1000.branches TO lb_writer",
        "a write privilege on a table",
    ),
    "lb_roles": ("CREATE ROLE lb_roles LOGIN CREATEROLE", "CREATEROLE"),
    "lb_signal": ("CREATE ROLE lb_signal LOGIN IN ROLE pg_signal_backend", "pg_signal_backend"),
    "lb_all_data": ("CREATE ROLE lb_all_data LOGIN IN ROLE pg_read_all_data", "pg_read_all_data"),
    "lb_stats": ("CREATE ROLE lb_stats LOGIN IN ROLE pg_monitor", "pg_read_all_stats"),
}


@pytest.fixture(scope="module")
def privileged(server: postgres.Server) -> dict[str, str]:
    import psycopg

    with psycopg.connect(server.socket_url("postgres"), autocommit=True) as conn:
        for role, (statements, _) in PRIVILEGED.items():
            conn.execute(f"DROP ROLE IF EXISTS {role}")
            for statement in statements.split("; "):
                conn.execute(statement)
            conn.execute(f"GRANT CONNECT ON DATABASE {postgres.DATABASE} TO {role}")
    return {role: server.socket_url(role) for role in PRIVILEGED}


@pytest.mark.parametrize("role", list(PRIVILEGED))
def test_a_role_that_can_do_more_than_read_is_refused_on_connect(
    server: postgres.Server, privileged: dict[str, str], role: str
) -> None:
    """A read-only transaction does not stop what such a role can do from a SELECT (a
    superuser's pg_read_file, COPY ... TO PROGRAM): the tool will not run a statement as it."""
    db = open_database(privileged[role], "bank_s1000")
    with pytest.raises(SQLError) as refused:
        db.query("SELECT pg_read_file('PG_VERSION')", 5, 5)
    assert f"the role {role!r}" in str(refused.value)
    assert PRIVILEGED[role][1] in str(refused.value)


def test_task_runs_sharing_the_reader_role_cannot_see_or_stop_each_other(
    server: postgres.Server,
) -> None:
    """Concurrent task runs connect as one role: none may read another's SQL in
    pg_stat_activity or end its session (pg_terminate_backend, pg_cancel_backend)."""
    import psycopg

    with psycopg.connect(server.url(), connect_timeout=10, autocommit=True) as other:
        other.execute("SELECT 'another task run''s question' AS marker")
        pid = other.info.backend_pid
        db = open_database(server.url(), "bank_s1000")
        with pytest.raises(SQLError, match="permission denied"):
            db.query("SELECT pid, query FROM pg_stat_activity", 5, 5)
        seen = db.query("SELECT pid, query FROM pg_stat_get_activity(NULL)", 5, 50)
        assert pid in [row[0] for row in seen.rows]
        assert all("another task run" not in str(row[1]) for row in seen.rows), seen.rows
        for signal in ("pg_terminate_backend", "pg_cancel_backend"):
            with pytest.raises(SQLError, match="permission denied"):
                db.query(f"SELECT {signal}({pid})", 5, 5)
        assert other.execute("SELECT 1").fetchone() == (1,)  # still alive


def test_the_reader_role_passes_the_check(server: postgres.Server) -> None:
    assert open_database(server.url(), "bank_s1000").query("SELECT 1", 5, 5).rows == [(1,)]


def test_tcp_connections_need_the_password_which_only_the_passfile_holds(
    server: postgres.Server,
) -> None:
    import psycopg

    url = server.url()
    assert url.startswith("postgresql://loopbench_reader@127.0.0.1:") and ":" not in url.split("@")[
        0
    ].removeprefix("postgresql://")
    assert (server.root / "url").read_text().strip() == url
    assert server.passfile.stat().st_mode & 0o777 == 0o600
    assert server.root.stat().st_mode & 0o777 == 0o700  # the trusted socket lies in it
    bare = url.split("?")[0]
    for role in ("loopbench_reader", "postgres", "loopbench"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(bare.replace("loopbench_reader", role), connect_timeout=10)
    with psycopg.connect(url, connect_timeout=10) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("loopbench_reader",)


PEAK = r"""
import resource, sys
sys.path.insert(0, sys.argv[1])
from harness.sql import open_database
db = open_database(sys.argv[2], "bank_s1000")
db.query("SELECT 1", 30, 5)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = db.query("SELECT repeat('x', 1000) FROM generate_series(1, 300000)", 60, 5)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(result.rows), result.total, (after - before) // 1024)
"""


LONG_VALUES = r"""
import resource, sys
sys.path.insert(0, sys.argv[1])
from harness.sql import open_database
from harness.sql.tools import render
db = open_database(sys.argv[2], "bank_s1000")
db.query("SELECT 1", 30, 5)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = db.query("SELECT n, repeat('x', 40000000) AS big, decode(repeat('ab', 5000000), 'hex') "
                  "FROM generate_series(1, 5) AS n", 60, 5)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)
print(render(result))
"""


def test_long_values_are_cut_in_the_server_before_they_reach_the_client(
    server: postgres.Server,
) -> None:
    """Five rows of a 40 MB text and a 5 MB blob: each value crosses cut to a cell (its length
    said), so the client does not hold 225 MB for five rows; numbers keep their rendering."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", LONG_VALUES, root, server.url()],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    grown, *text = done.stdout.splitlines()
    assert int(grown) < 50, f"the client grew by {grown} MB for 5 rows"
    assert text[0] == "n | big | decode"
    assert text[1].startswith("1 | xxx") and "[... cut: 40000000 characters]" in text[1]
    assert text[1].endswith("<blob of 5000000 bytes>") and text[-1] == "(5 rows)"


def test_the_row_cap_bounds_the_clients_memory(server: postgres.Server) -> None:
    """300 MB of rows, 5 kept: a client-side cursor holds every row before the cap applies
    (libpq's buffer, outside Python's allocator, so the peak is read from the process)."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", PEAK, root, server.url()],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    kept, total, grown_mb = map(int, done.stdout.split())
    assert (kept, total) == (5, 300000)
    assert grown_mb < 100, f"the client grew by {grown_mb} MB for 5 rows"
