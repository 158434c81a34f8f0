"""The run record: every committed run file reads through the typed model, old shapes are
brought to the current one, and what is no record is named with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.database.data import DatabaseData
from evals.errors import RunFileError
from evals.record import RECORD_VERSION, committed, read_records, read_runs
from evals.record.bfcl import RECORD_VERSION as BFCL_VERSION
from evals.record.bfcl import read_items
from evals.record.run import parse
from evals.record.spec import SPEC_FIELDS_BEFORE, renamed_spec
from evals.report.bfcl import summarize as bfcl_summarize
from evals.report.summary import summarize
from tests.helpers import ROOT, flat_items, run_record

# Run files of the eval runner; BFCL's items, the Agents SDK's answers, the labelled samples
# (results/tau2/labels) and τ²'s user's first messages (results/tau2/user-opening, written by
# lab/studies/tau2_user_opening.py) are records of their own.
OTHER_KINDS = ("bfcl", "agents_sdk", "labels", "user-opening")


def committed_run_files() -> list[Path]:
    return [
        p
        for p in committed(ROOT / "results", "**/*.jsonl")
        if ".runs" not in str(p) and not any(k in p.parts for k in OTHER_KINDS)
    ]


def test_every_committed_record_reads_through_the_typed_model() -> None:
    files = committed_run_files()
    records = [r for f in files for r in read_runs(f)]
    assert len(files) >= 78 and len(records) >= 846
    assert all(r.record_version == RECORD_VERSION for r in records)
    # Written before the figure existed: None, never a missing key or a zero.
    old = [r for r in records if r.invalid_calls is None]
    assert old and summarize(old)["invalid_calls"] is None
    assert summarize([r for r in records if r.invalid_calls is not None])["invalid_calls"] >= 0


def test_a_version_1_record_is_brought_to_the_current_shape(tmp_path: Path) -> None:
    v1 = {"model": "m", "task_id": "a", "question": "q", "status": "completed", "correct": True}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(v1) + "\n")
    (record,) = read_runs(path)
    assert (record.record_version, record.correct, record.spec.preset, record.queue_ms) == (
        RECORD_VERSION,
        True,
        None,
        None,
    )
    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps(record.line()) + "\n")
    assert read_runs(again) == [record]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({"model": "m", "question": "q", "status": "x"}, "task_id: Field required"),
        (
            {"model": "m", "task_id": "a", "question": "q", "status": "x", "colour": 1},
            "colour: Extra inputs are not permitted",
        ),
        (
            {"model": "m", "task_id": "a", "question": "q", "status": "x", "record_version": 99},
            "record_version 99 is newer than this code reads",
        ),
    ],
)
def test_what_is_no_record_is_named_with_its_line(
    tmp_path: Path, line: dict[str, object], said: str
) -> None:
    good = run_record(task_id="a").line()
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(RunFileError, match=f"run.jsonl, line 2: not a run record .*{said}"):
        read_runs(path)


def test_one_versioned_parse_serves_every_record_kind() -> None:
    """Run records and BFCL item records read through ``evals.record.versioned``: each version's
    upgrade runs in order, and what is not a record names the place and the kind."""
    from pydantic import BaseModel

    from evals.record import versioned

    class Renamed(BaseModel):
        record_version: int = 3
        name: str

    upgrades = {
        1: lambda r: {**r, "title": r.pop("label")},
        2: lambda r: {**r, "name": r.pop("title")},
    }
    assert versioned.parse(Renamed, {"label": "x"}, "f, line 1", "thing", upgrades).name == "x"
    assert (
        versioned.parse(Renamed, {"record_version": 2, "title": "y"}, "f", "thing", upgrades).name
        == "y"
    )
    with pytest.raises(RunFileError, match=r"f, line 4: not a thing \(record_version 'two' is not"):
        versioned.parse(Renamed, {"record_version": "two"}, "f, line 4", "thing", upgrades)
    with pytest.raises(RunFileError, match=r"g: not a thing \(name: Field required"):
        versioned.parse(Renamed, {"record_version": 3}, "g", "thing")


def test_a_version_2_record_names_its_environment_and_keeps_what_ran_under_its_spec() -> None:
    """The committed records are version 1 and 2, read through the upgrade: what ran moves
    under ``spec`` unchanged, and a record with a database or an audit ran on the database."""
    for path in committed_run_files():
        raw = read_records(path)
        for line, record in zip(raw, read_runs(path), strict=True):
            if line.get("record_version", 1) >= 3:
                continue  # written as it is read: nothing to upgrade
            ran = record.spec.model_dump()
            before = {k: v for k, v in line.items() if k in SPEC_FIELDS_BEFORE}
            named = renamed_spec({"spec": before})["spec"]  # version 4's names
            assert all(ran[k] == v for k, v in named.items() if k != "preset")
            on_database = line.get("database") is not None or line.get("audit") is not None
            assert record.environment.name == ("database" if on_database else "workspace")
            if on_database:
                assert record.environment == DatabaseData(
                    database=line.get("database"), audit=line.get("audit")
                )


def test_every_committed_bfcl_item_reads_through_the_typed_model_and_its_summary_holds(
    tmp_path: Path,
) -> None:
    """BFCL's items share the RunSpec: a version 3 item's header moves under ``spec`` and
    ``bfcl``, the readers see every key they saw, and the summaries rebuild to the figures
    committed beside the run files."""
    files = committed(ROOT / "results" / "bfcl")
    assert len(files) >= 10
    for path in files:
        raw = read_records(path)
        records = read_items(path)
        assert all(r.record_version == BFCL_VERSION for r in records)
        for line, seen in zip(raw, flat_items(path), strict=True):
            # The preset's name, ``policy`` in version 3, is ``preset`` since version 5.
            today = {k: "preset" if k == "policy" else k for k in line}
            assert {k: seen[today[k]] for k in line if k != "record_version"} == {
                k: v for k, v in line.items() if k != "record_version"
            }
        kept = json.loads(path.with_suffix(".summary.json").read_text())
        rebuilt = bfcl_summarize(read_items(path))
        assert rebuilt == {k: v for k, v in kept.items() if k != "elapsed_ms"}, path.name


def test_a_version_3_record_reads_with_the_presets_and_the_loops_names_of_today() -> None:
    """Version 3 kept the preset as ``spec.policy`` and two of the loop's limits under the
    eval's old names; version 4 reads them as ``spec.preset``, ``max_budget_usd`` and
    ``timeout_s``, the other keys as they were."""
    path = ROOT / "results" / "mcp" / "files6-ours-penalized.jsonl"
    raw = read_records(path)[0]
    assert raw["record_version"] == 3 and "policy" in raw["spec"]
    changed = dict(raw, spec={**raw["spec"], "loop": {**raw["spec"]["loop"]}})
    changed["spec"]["loop"].update(budget_usd=0.5, task_timeout_s=20.0)
    record = parse(changed, "v3")
    assert record.record_version == RECORD_VERSION == 5
    assert record.spec.preset is not None
    # The SQL tools' limits are the database's: an MCP task's record keeps the rest.
    sql = {"row_cap", "statement_timeout_s"}
    policy = raw["spec"]["policy"]
    assert sql <= set(policy["settings"]) and record.spec.preset.model_dump() == {
        **policy,
        "settings": {k: v for k, v in policy["settings"].items() if k not in sql},
    }
    loop = record.spec.loop or {}
    assert (loop["max_budget_usd"], loop["timeout_s"]) == (0.5, 20.0)
    assert not {"budget_usd", "task_timeout_s"} & set(loop)
    assert {k: loop[k] for k in ("max_turns", "approvals")} == {
        k: raw["spec"]["loop"][k] for k in ("max_turns", "approvals")
    }
    # No task of it had a user: the conversation's settings it kept are gone (version 5).
    assert "agent" in raw["spec"]["loop"] and "agent" not in loop
    assert record.spec.conversation is None


# The settings only a conversation reads, and those only the database's tasks read.
CONVERSATION_SETTINGS = {"user_model", "user_temperature", "max_user_turns", "max_steps",
                         "max_errors", "agent"}  # fmt: skip
SQL_SETTINGS = {"row_cap", "statement_timeout_s"}


def test_a_version_4_record_reads_with_its_settings_in_layers() -> None:
    """Version 4 kept the conversation's settings in every record's ``loop`` and the SQL
    tools' limits in every preset: read today, a conversation's go to ``conversation``, a file
    task's are gone, and only a database task keeps the SQL limits."""
    path = ROOT / "results" / "tau2" / "airline-test-oracle-agent.jsonl"
    raw = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert raw["record_version"] == 4 and set(raw["spec"]["loop"]) >= CONVERSATION_SETTINGS
    assert set(raw["spec"]["preset"]["settings"]) >= SQL_SETTINGS
    talk = parse(raw, "talk")
    assert talk.spec.loop is not None and talk.spec.conversation is not None
    assert set(talk.spec.conversation) == CONVERSATION_SETTINGS
    assert not CONVERSATION_SETTINGS & set(talk.spec.loop)
    assert talk.spec.conversation["max_steps"] == raw["spec"]["loop"]["max_steps"]
    assert talk.spec.preset is not None and not SQL_SETTINGS & set(talk.spec.preset.settings)
    files = parse({**raw, "conversation": None, "environment": {"name": "workspace"}}, "files")
    assert files.spec.conversation is None and files.spec.loop is not None
    assert not CONVERSATION_SETTINGS & set(files.spec.loop)
    sql = parse({**raw, "conversation": None, "environment": {"name": "database"}}, "sql")
    assert sql.spec.preset is not None and set(sql.spec.preset.settings) >= SQL_SETTINGS


def test_a_file_tasks_record_holds_no_conversation_or_sql_setting(
    scripted_url: str, tmp_path: Path
) -> None:
    import subprocess
    import sys

    out = tmp_path / "run.jsonl"
    ran = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--base-url", scripted_url, "--model",
         "scripted:oracle", "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    record = read_runs(out)[0]
    assert record.record_version == RECORD_VERSION == 5
    assert record.spec.conversation is None and record.spec.loop is not None
    assert not CONVERSATION_SETTINGS & set(record.spec.loop), record.spec.loop
    assert record.spec.preset is not None and record.spec.preset.settings
    assert not SQL_SETTINGS & set(record.spec.preset.settings)
    line = read_records(out)[0]  # as written, not only as read
    assert "conversation" in line["spec"] and line["spec"]["conversation"] is None
    assert not (CONVERSATION_SETTINGS | SQL_SETTINGS) & {
        *line["spec"]["loop"],
        *line["spec"]["preset"]["settings"],
    }


def test_a_bare_interpreter_reads_an_environments_record_and_task_typed() -> None:
    """τ²'s record data and task field are declared by its environment, not registered at
    import by the record or task layers: reading a record or validating a task loads the
    registry first, so neither reads as another environment's (``OtherData``) or is refused
    for an unknown key, and an older record loses the settings another environment owns,
    whatever was imported before."""
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from evals.record.run import parse\n"
        "raw = json.loads(open(sys.argv[1]).readline())\n"
        "files = parse({**raw, 'conversation': None, 'environment': {'name': 'workspace'}}, 'f')\n"
        "print(sorted(k for k in files.spec.preset.settings if k in ('row_cap', 'nudges')))\n"
        "print(type(parse(raw, 'r').environment).__name__)\n"
        "from evals.tasks import Task\n"
        "task = Task.model_validate({'id': 'a', 'question': 'q', 'user': {'scenario': 's'},\n"
        "    'checks': [{'kind': 'judged', 'by': 'tau2'}], 'tau2': {'domain': 'airline',\n"
        "    'task': '2'}})\n"
        "print(sorted(task.environment_fields))\n"
    )
    path = ROOT / "results" / "tau2" / "airline-test-oracle-agent.jsonl"
    ran = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT,
        timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    # A version 4 record of a file task read first of all: the SQL limits it kept are dropped.
    assert ran.stdout.split("\n")[:3] == ["['nudges']", "Tau2Data", "['tau2']"], ran.stdout
