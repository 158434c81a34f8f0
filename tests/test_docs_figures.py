"""Figures the README quotes are written by the commands that build their results; here they
are built again from the committed files and compared, so a page cannot drift from results/."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.record import RunRecord
from lab.report.docs import block
from lab.report.workflows import (
    DOCS,
    FINDINGS,
    default_model_table,
    default_sources,
    ladder_table,
)


def test_the_workflow_tables_are_what_the_committed_runs_give() -> None:
    sources = default_sources()
    ladder = ladder_table(sources)
    assert block(FINDINGS, "workflows-ladder") == ladder, "run make workflows-report"
    assert block(DOCS, "workflows-ladder") == ladder, "run make workflows-report"
    assert block(DOCS, "workflows-default") == default_model_table(sources)


def test_the_readme_leaderboard_is_what_the_committed_board_gives() -> None:
    import json

    from lab.studies import leaderboard

    data = json.loads((leaderboard.COMMITTED / "leaderboard.json").read_text())
    for page in (leaderboard.README, leaderboard.FINDINGS):
        assert block(page, "leaderboard") == leaderboard.readme_table(data), page
    assert block(leaderboard.FINDINGS, "leaderboard-verdicts") == leaderboard.readme_verdicts(data)
    assert block(leaderboard.FINDINGS, "leaderboard-kinds") == leaderboard.kinds_table(data)


def test_the_board_by_kind_is_counted_from_the_runs() -> None:
    """The committed board's answers by kind are the run files' own counts (a board whose
    JSON drifted from its runs fails here, not only in the docs)."""
    import json

    from evals.record import read_records
    from lab.studies import leaderboard

    data = json.loads((leaderboard.COMMITTED / "leaderboard.json").read_text())
    for row in data["rows"]:
        records = read_records(leaderboard.COMMITTED.parents[1] / row["run_file"])
        tally: dict[str, list[int]] = {}
        for r in records:
            if r.get("status") not in ("error", "not_run"):
                t = tally.setdefault(r["kind"], [0, 0])
                t[0] += bool(r["correct"])
                t[1] += 1
        assert data["kinds"][f"{row['model']} {row['preset']}"] == dict(sorted(tally.items()))


def test_the_bfcl_tables_are_what_the_committed_runs_give() -> None:
    from lab.report import bfcl_docs as bfcl

    for name, (runs, sizes) in bfcl.DOCS_TABLES.items():
        assert block(bfcl.DOCS, name) == bfcl.docs_table(runs, sizes), f"{name}: make bfcl-report"
    for name, text in bfcl.habits_blocks().items():
        assert block(bfcl.DOCS, name) == text, f"{name}: make bfcl-report"


def test_a_bfcl_run_changed_without_its_docs_fails_the_check(tmp_path: Path) -> None:
    """A copy of a quoted run with one verdict flipped gives another table."""
    import json
    import shutil

    from lab.report import bfcl_docs as bfcl

    runs, sizes = bfcl.DOCS_TABLES["bfcl-live"]
    stem = runs[0][0]
    shutil.copy(bfcl.COMMITTED / f"{stem}.jsonl", tmp_path / f"{stem}.jsonl")
    lines = (tmp_path / f"{stem}.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["valid"] = not first["valid"]
    (tmp_path / f"{stem}.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert bfcl.docs_table(runs, sizes, tmp_path) != block(bfcl.DOCS, "bfcl-live")


def test_the_sweep_table_in_the_policies_page_is_the_committed_sweep() -> None:
    import json

    from lab.studies import sweep

    data = json.loads((sweep.COMMITTED / "sweep.json").read_text())
    assert block(sweep.POLICIES, "sweep-table") == sweep.sweep_table(data["runs"], data["best"])


def test_the_tables_quoted_from_single_runs_are_what_the_runs_give() -> None:
    from lab.report import quoted

    for page, name, _inputs, make in quoted.BLOCKS:
        assert block(page, name) == make(), f"{page} {name}: run make compare"


def test_the_sql_page_is_what_the_committed_sql_runs_give(tmp_path: Path) -> None:
    import shutil

    from lab.report import sql_page
    from lab.report.docs import fill

    blocks = sql_page.docs_blocks()
    assert {name for name, _ in blocks} >= {"sql-chapter", "sql-story", "sql-ladder"}
    for name, text in blocks:
        assert block(sql_page.DOCS, name) == text, f"docs/sql.md {name}: run make sql-report"
    # A run file changed without its page: the blocks built from the copy differ.
    folder = tmp_path / "sql"
    shutil.copytree(sql_page.SQL, folder, ignore=shutil.ignore_patterns("*.runs"))
    run = folder / "qwen-coder-1.5b-analyst-hinted.jsonl"
    lines = run.read_text().splitlines()
    lines[1] = lines[1].replace('"answer": "', '"answer": "SELECT 1 FROM t; ', 1)
    run.write_text("\n".join(lines) + "\n")
    edited = dict(sql_page.docs_blocks(folder))
    assert edited["sql-story"] != block(sql_page.DOCS, "sql-story")
    page = tmp_path / "sql.md"
    shutil.copy(sql_page.DOCS, page)
    fill(page, "sql-story", edited["sql-story"])
    assert block(page, "sql-story") == edited["sql-story"]


def test_the_committed_paired_pages_and_their_verdicts_are_what_the_runs_give(
    tmp_path: Path,
) -> None:
    import shutil

    from lab.report import paired_pages

    for pages, name, listed in paired_pages.BLOCKS:
        pairs = paired_pages.ready(listed)
        # A pair is left out only while its second run is still under way (its .partial).
        for pair in set(listed) - set(pairs):
            _, b = pair.files()
            assert b.with_name(b.name + ".partial").is_file(), f"{pair.name}: no run files"
        for pair in pairs:
            committed = paired_pages.RESULTS / pair.page
            assert committed.read_text() == paired_pages.page(pair), f"{committed}: make paired"
        text = paired_pages.block_text(name, pairs)
        for page in pages:
            assert block(page, name) == text, f"{page} {name}: run make paired"
    # One record of a paired run turned right: the verdicts built from the copy differ.
    pairs = paired_pages.PRESET_PAIRS
    for pair in pairs:
        for run in (pair.a, pair.b):
            (tmp_path / run).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(paired_pages.RESULTS / run, tmp_path / run)
    edited = tmp_path / pairs[-1].b
    lines = edited.read_text().splitlines()
    wrong = next(i for i, line in enumerate(lines) if '"correct": false' in line)
    lines[wrong] = lines[wrong].replace('"correct": false', '"correct": true', 1)
    edited.write_text("\n".join(lines) + "\n")
    assert paired_pages.verdicts(pairs, tmp_path) != paired_pages.verdicts(pairs)


def test_the_policies_page_quotes_both_grader_corpora_as_they_replay() -> None:
    from lab.studies import grader_check as g

    replayed = g.replay(g.read_corpus(g.CORPUS))
    held = g.replay(g.read_corpus(g.HELDOUT))
    assert block(g.POLICIES, "grader-corpora") == g.corpora_sentences(replayed, held), (
        "run make grader-check"
    )


def test_a_resumed_run_says_its_time_covers_its_last_part_only(tmp_path: Path) -> None:
    import json
    import shutil
    from datetime import datetime

    from evals.record.run import read_runs
    from evals.report.compare import load_runs
    from lab.report import paired_pages

    source = paired_pages.RESULTS / "runs" / "20261130-214336-fresh-clone-default.jsonl"
    run_file = tmp_path / source.name
    shutil.copy(source, run_file)
    ends = sorted(datetime.fromisoformat(r.timestamp or "") for r in read_runs(run_file))
    summary = tmp_path / source.name.replace(".jsonl", ".summary.json")
    whole = (ends[-1] - ends[0]).total_seconds() * 1000 + 5000
    summary.write_text(json.dumps({"elapsed_ms": whole}))
    (run,) = load_runs([run_file])
    assert "resumed" not in paired_pages.took(run)
    # The command that finished it ran only the runs after the first one's end.
    part = (ends[-1] - ends[1]).total_seconds() * 1000
    summary.write_text(json.dumps({"elapsed_ms": part}))
    last = sum(end >= ends[1] for end in ends)
    assert f"(the last {last} of {len(ends)} task runs, resumed)" in paired_pages.took(run)


def test_a_pair_made_at_different_code_versions_says_so_on_its_page_and_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The leaderboard's slots pair was run 126 commits apart; its page and the terminal say
    so, with the count of files that can change a reply. A pair made at one commit says
    nothing of the kind."""
    from evals.cli import main
    from lab.report.paired_pages import RESULTS

    slots = RESULTS / "leaderboard" / "slots4" / "paired-qwen2.5-coder-1.5b-instruct-read-listed.md"
    text = slots.read_text()
    assert "**Not like for like: the runs were made at different code versions" in text
    assert (
        "81 files under serve_local, harness, evals/environments, evals/database, evals/mcp, "
        "evals/tau2, evals/workspace, evals/solvers" in text
    )
    assert "| 2026-12-02 |" in text and "| 2026-12-03 |" in text
    one = RESULTS / "leaderboard" / "qwen2.5-coder-1.5b-instruct-read-listed.jsonl"
    four = RESULTS / "leaderboard" / "slots4" / "qwen2.5-coder-1.5b-instruct-read-listed.jsonl"
    assert main(["compare", "--paired", str(one), str(four)]) == 0
    assert "Not like for like" in capsys.readouterr().err
    same = "files6-1.5b-all-helps-vs-read-first.md"
    assert "like for like" not in (RESULTS / "paired" / same).read_text()


def test_the_tool_schema_tables_are_what_the_committed_runs_give() -> None:
    import json

    from lab.commands.conformance import COMMITTED, DOCS
    from lab.conformance import tool_schemas

    runs = [json.loads(p.read_text()) for p in sorted(COMMITTED.glob("*.json"))]
    assert [r["label"] for r in runs] == ["llama-server", "ours"]
    assert block(DOCS, "tool-schemas") == tool_schemas.summary_table(runs)
    assert block(DOCS, "tool-schemas-sets") == tool_schemas.sets_table(runs)
    ours = runs[1]
    assert len(ours["forced"]) == 135 and tool_schemas.misses(ours) == []


def test_the_tau2_page_is_what_the_committed_conversation_runs_give() -> None:
    from lab.report import tau2

    for name, text in tau2.blocks().items():
        assert block(tau2.PAGE, name) == text, f"{name}: run python -m lab tau2-report"


def _tau2_departures(records: list[RunRecord]) -> list[str]:
    """What in a τ² run's records τ²'s runner would not have done: a setting of the run that
    differs from its runner's (``differs``, which the run's table prints: a cap on the user's
    messages among them) but the seed rule kept on purpose, an empty agent message passed to
    the user, one seed shared by an epoch's tasks or by a task's two sides."""
    from evals.tau2.rules import differs
    from lab.report.tau2 import settings

    found = []
    by_epoch: dict[int, list[tuple[int | None, int | None]]] = {}
    for r in records:
        # The one deliberate difference reads "seed S: one seed per task, epoch and side".
        found += [f"{r.task_id}: {d}" for d in differs(settings(r)) if not d.startswith("seed ")]
        talk = r.conversation
        user_seed = talk.user.seed if talk is not None else None
        by_epoch.setdefault(r.epoch, []).append((r.seed, user_seed))
        if talk is not None and user_seed is not None and user_seed == r.seed:
            found.append(f"{r.task_id}: one seed for agent and user")
        for n, turn in enumerate(talk.said if talk is not None else [], start=1):
            if n > 1 and not (turn.replying_to or "").strip():
                found.append(f"{r.task_id}/e{r.epoch}: user turn {n} answers an empty message")
    for epoch, seeds in by_epoch.items():
        for side in (0, 1):
            drawn = [s[side] for s in seeds if s[side] is not None]
            if len(set(drawn)) < len(drawn):
                found.append(f"epoch {epoch}: one seed shared by its tasks")
    return found


def test_no_committed_tau2_run_caps_the_user_passes_an_empty_message_or_shares_a_seed() -> None:
    """The runs under results/tau2/ are held as τ²'s runner holds a conversation (its one
    deliberate difference, a seed per task, epoch and side, in place of its one per epoch);
    the runs moved aside were not, and the same check says so of each."""
    from evals.record import committed, read_runs
    from lab.report import tau2

    runs = committed(tau2.RESULTS, "*.jsonl")
    assert runs
    for path in runs:
        assert _tau2_departures(read_runs(path)) == [], path.name
    old = {p.stem: _tau2_departures(read_runs(p)) for p in committed(tau2.SUPERSEDED, "*.jsonl")}
    assert old and all(old.values()), [name for name, found in old.items() if not found]
    assert any(
        "10 user messages (tau2's: no cap)" in f for f in old["airline-test-qwen2.5-coder-1.5b-k4"]
    )
    assert any("shared" in f for f in old["airline-test-qwen2.5-coder-1.5b-k4"])
    assert any("empty message" in f for f in old["retail-test-qwen2.5-coder-1.5b"])
