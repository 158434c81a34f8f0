"""The steps the workflows share: gathering what a task's environment holds (a workspace: every
file, or the ones the model picks; a database: the model writes one query, the code runs it,
with one repair round if asked), and the answer. The workflows never branch on the environment:
they call :func:`gather`, which asks :data:`GATHER`, one line per environment."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from evals.errors import EvalError
from evals.solvers.base import Steps, arguments_of, noted, said
from harness.sql import DESCRIBE_TOOL, RUN_SQL_TOOL
from harness.tools import Tool, listed_names

ANSWER = "Answer the question from the results above. Be brief."
PICK_FILES = "Choose the files you need to read to answer the question."
PICK_TABLES = "Choose the tables whose first rows you need to see to answer the question."
WRITE_QUERY = "Write one SQL query that answers the question, and run it with run_sql."
REPAIR = "That query failed; the error is above. Write one corrected query and run it with run_sql."
TEXTS = (ANSWER, PICK_FILES, PICK_TABLES, WRITE_QUERY, REPAIR)
SAMPLE_ROWS = 5


def _pick_tool(kind: str, names: list[str]) -> Tool:
    parameters = {
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "items": {"type": "string", "enum": names},
                "minItems": 1,
                "uniqueItems": True,
            }
        },
        "required": ["names"],
        "additionalProperties": False,
    }
    return noted(f"choose_{kind}", f"Name the {kind} to read.", parameters, "Noted.")


async def pick(steps: Steps, kind: str, names: list[str], text: str) -> list[str]:
    """The names the model picks among ``names`` (the call grammar holds it to them); every
    name where it picks none it may have."""
    if not names:
        return []
    reply = await steps.ask(text, offer=[_pick_tool(kind, names)])
    if reply.get("tool_calls"):
        await steps.answer_calls()
    chosen = arguments_of(reply).get("names")
    picked = [n for n in names if isinstance(chosen, list) and n in chosen]
    return picked or names


async def read_workspace(steps: Steps, route: bool = False, repair: bool = False) -> None:
    """List the files and read each one (``route``: the ones the model picks; a read is not
    repaired)."""
    (listing,) = await steps.run_tools([("list_files", {})])
    names = listed_names(steps.content(listing))
    if route:
        names = await pick(steps, "files", names, PICK_FILES)
    if names:
        await steps.run_tools([("read_file", {"path": n}) for n in names])


async def query_database(steps: Steps, route: bool = False, repair: bool = False) -> None:
    """Describe the database, then one query the model writes, run by the code (``route``:
    first the first rows of the tables the model picks; ``repair``: one more query when the
    first one failed)."""
    (described,) = await steps.run_tools([(DESCRIBE_TOOL, {})])
    if route:
        tables = list((described.facts or {}).get("tables") or [])
        chosen = await pick(steps, "tables", tables, PICK_TABLES)
        await steps.run_tools(
            [(RUN_SQL_TOOL, {"query": f"SELECT * FROM {t} LIMIT {SAMPLE_ROWS}"}) for t in chosen]
        )
    run_sql = steps.tools[RUN_SQL_TOOL]
    text = WRITE_QUERY
    for _ in range(2 if repair else 1):
        reply = await steps.ask(text, offer=[run_sql])
        if not reply.get("tool_calls"):
            return
        ran = await steps.answer_calls()
        if all(r.ok for r in ran):
            return
        text = REPAIR


# How each environment's evidence is gathered, by environment name.
GATHER: dict[str, Callable[..., Awaitable[None]]] = {
    "workspace": read_workspace,
    "database": query_database,
}


async def gather(steps: Steps, route: bool = False, repair: bool = False) -> None:
    """What the task's environment holds, gathered by the code (``route``: the model picks
    what to read; ``repair``: a failed query gets one more try)."""
    found = GATHER.get(steps.environment)
    if found is None:
        raise EvalError(
            f"no workflow can gather evidence on a task's {steps.environment!r} environment "
            f"(task {steps.task.id}); they can on: {', '.join(GATHER)}"
        )
    await found(steps, route=route, repair=repair)


async def answer(steps: Steps) -> str:
    return said(await steps.ask(ANSWER))
