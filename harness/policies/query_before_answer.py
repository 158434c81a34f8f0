"""``query_before_answer``: an answer given before any ``run_sql`` call succeeded is met, once,
with a request to run the query it depends on (with the user's question); the reply to it must
call ``run_sql``. The SQL counterpart of ``read_before_answer``: a model that reads an error's
hint, looks at the schema and then explains its fix to the user is asked to run the fix."""

from __future__ import annotations

from harness.policies.base import Config, Hook, Said, Setting, TurnPlan, named
from harness.policies.reads import answered_before_success, question
from harness.sql.tools import RUN_SQL_TOOL
from harness.state import RunState

QUERY_FIRST = (
    "None of your queries has run yet, so no figure has come from the database. Run the query "
    "your answer depends on with run_sql, using only the columns describe lists. Then answer "
    "the question from its result: {question}"
)

QUERY_BEFORE_ANSWER: Setting[bool] = Setting(
    "query_before_answer",
    False,
    "an answer given before any run_sql call succeeded is met, once, with a request to run "
    "the query it depends on; the next reply must call run_sql",
    "bool",
    doc=(
        "the SQL counterpart of `--read-before-answer`: an answer given before any `run_sql` call "
        'succeeded is met, once, with "None of your queries has run yet, so no figure has come from'
        " the database. Run the query your answer depends on with run_sql, using only the columns "
        "describe lists. Then answer the question from its result: \" and the user's own question; "
        "the reply to it must call `run_sql` (the `analyst-query-first` preset). Asked only where "
        "`run_sql` is offered, never at a limit's conclusion"
    ),
)


class QueryFirst(Hook):
    name = "query_before_answer"
    settings = (QUERY_BEFORE_ANSWER,)

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        """Only when run_sql is offered, never at a limit's conclusion, once a run; a query
        counts when it succeeded."""
        if not QUERY_BEFORE_ANSWER.of(config):
            return None
        if not answered_before_success(state, RUN_SQL_TOOL, offered, self.name):
            return None
        return Said(QUERY_FIRST.format(question=question(state)))

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if QUERY_BEFORE_ANSWER.of(config) and state.just_asked(self.name):
            plan.require(named(RUN_SQL_TOOL))


HOOK = QueryFirst()
