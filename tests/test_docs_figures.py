"""Figures the README quotes are written by the commands that build their results; here they
are built again from the committed files and compared, so a page cannot drift from results/."""

from __future__ import annotations

from evals.report.docs import block
from evals.report.workflows import README, default_sources, ladder_table


def test_the_readme_workflow_table_is_what_the_committed_runs_give() -> None:
    assert block(README, "workflows-ladder") == ladder_table(default_sources()), (
        "run make workflows-report"
    )


def test_the_readme_leaderboard_is_what_the_committed_board_gives() -> None:
    import json

    from evals.studies.leaderboard import COMMITTED, README, readme_table, readme_verdicts

    data = json.loads((COMMITTED / "leaderboard.json").read_text())
    assert block(README, "leaderboard") == readme_table(data), "run make leaderboard"
    assert block(README, "leaderboard-verdicts") == readme_verdicts(data)
