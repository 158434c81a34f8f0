"""Figures the README quotes are written by the commands that build their results; here they
are built again from the committed files and compared, so a page cannot drift from results/."""

from __future__ import annotations

from evals.report.docs import block
from evals.report.workflows import FINDINGS, default_sources, ladder_table


def test_the_workflow_table_is_what_the_committed_runs_give() -> None:
    assert block(FINDINGS, "workflows-ladder") == ladder_table(default_sources()), (
        "run make workflows-report"
    )


def test_the_readme_leaderboard_is_what_the_committed_board_gives() -> None:
    import json

    from evals.studies import leaderboard

    data = json.loads((leaderboard.COMMITTED / "leaderboard.json").read_text())
    for page in (leaderboard.README, leaderboard.FINDINGS):
        assert block(page, "leaderboard") == leaderboard.readme_table(data), page
    assert block(leaderboard.FINDINGS, "leaderboard-verdicts") == leaderboard.readme_verdicts(data)
