"""The OpenAI Agents SDK as a client of our server: a conformance check by a real framework.

An ``Agent`` with two function tools, ``list_files`` and ``read_file``, over a fresh workspace
(the three seed files), on ``OpenAIChatCompletionsModel`` pointed at the server, with the
SDK's defaults: ``tool_choice`` unset and strict schemas (``title`` on every property,
``additionalProperties: false``). Tracing is off, so nothing leaves the machine. Each question
of a task set goes through it; what the SDK saw (final output, the calls it ran, the replies
it received, what it raised) goes to ``OUT/<model>.jsonl`` and ``OUT/<model>.md``::

    python -m lab.conformance.agents_sdk --base-url http://127.0.0.1:8000/v1 \
        --out results/agents_sdk

Nothing here is scored: the file says what the framework made of the server's replies.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import validators

from evals.errors import EvalError
from evals.markdown import table
from evals.record import slug
from evals.run.discovery import fetch_models
from evals.tasks import DEFAULT_TASKS, load_tasks
from harness.client import base_url_from_env
from harness.errors import ToolError
from harness.exactargs import ExactParser
from harness.hooks import BASE_PROMPT
from harness.workspace import Workspace, create_workspace
from serve_local.callshape import call_spans

if TYPE_CHECKING:
    from agents import Agent, FunctionTool

OUT = Path("results/agents_sdk")
MAX_TURNS = 10  # the runner's default cap, and the SDK's


@dataclass
class Outcome:
    """One question as the SDK ran it."""

    task_id: str
    question: str
    final_output: str | None
    # Each call the SDK ran: tool, arguments as sent, and whether they fit the tool's schema.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    replies: int = 0  # model replies the SDK received
    error: str | None = None  # what the SDK raised, if it did
    # Call-shaped objects naming a tool in the final output (calls left as text).
    calls_as_text: list[str] = field(default_factory=list)
    # What the run added to the conversation, as the SDK feeds it back to the model.
    transcript: list[Any] = field(default_factory=list)


def _agents() -> Any:
    try:
        import agents
    except ImportError as exc:
        raise SystemExit(
            "the OpenAI Agents SDK is not installed: pip install openai-agents (or the dev extra)"
        ) from exc
    return agents


def file_tools(workspace: Workspace) -> list[FunctionTool]:
    """``list_files`` and ``read_file`` over ``workspace``, as the SDK's function tools.

    A refused path or a missing file is the tool's answer (the text the model reads), as in
    the harness's own catalogue.
    """
    agents = _agents()

    def list_files() -> str:
        """List the files in the workspace with their sizes in bytes."""
        files = workspace.files()
        return "\n".join(f"{p.name}  {p.stat().st_size} bytes" for p in files) or "No files."

    def read_file(path: str) -> str:
        """Read one file of the workspace.

        Args:
            path: File name inside the workspace.
        """
        try:
            return workspace.existing(path).read_text(encoding="utf-8")
        except ToolError as exc:
            return f"Error: {exc}"

    return [agents.function_tool(list_files), agents.function_tool(read_file)]


def files_agent(base_url: str, model: str, tools: list[FunctionTool]) -> Agent:
    agents = _agents()
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    # No retries: a refused or failed request is what this check is looking for.
    client = AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=600)
    return agents.Agent(  # type: ignore[no-any-return]
        name="files",
        instructions=BASE_PROMPT,
        tools=tools,
        model=agents.OpenAIChatCompletionsModel(model=model, openai_client=client),
    )


def _calls(items: Sequence[Any], tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    calls = []
    for item in items:
        if getattr(item, "type", None) != "tool_call_item":
            continue
        name, arguments = item.raw_item.name, item.raw_item.arguments
        calls.append(
            {"name": name, "arguments": arguments, "valid": _fits(arguments, tools.get(name))}
        )
    return calls


def _fits(arguments: str, schema: dict[str, Any] | None) -> bool:
    if schema is None:
        return False
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return False
    return bool(validators.validator_for(schema)(schema).is_valid(value))


async def ask(
    base_url: str,
    model: str,
    task_id: str,
    question: str,
    scratch: Path,
    max_turns: int = MAX_TURNS,
) -> Outcome:
    """One question through a fresh agent on a fresh workspace."""
    import openai

    agents = _agents()
    tools = file_tools(create_workspace(scratch / task_id))
    schemas = {t.name: t.params_json_schema for t in tools}
    outcome = Outcome(task_id, question, None)
    try:
        result = await agents.Runner.run(
            files_agent(base_url, model, tools), question, max_turns=max_turns
        )
    except (agents.AgentsException, openai.APIError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        run = getattr(exc, "run_data", None)
        items, replies = (run.new_items, len(run.raw_responses)) if run else ([], 0)
    else:
        outcome.final_output = None if result.final_output is None else str(result.final_output)
        left = call_spans(outcome.final_output or "", schemas)
        outcome.calls_as_text = [span.name for span in left]
        items, replies = result.new_items, len(result.raw_responses)
    outcome.replies = replies
    outcome.tool_calls = _calls(items, schemas)
    outcome.transcript = [i.to_input_item() for i in items]
    return outcome


async def ask_all(
    base_url: str, model: str, tasks: Path = DEFAULT_TASKS, max_turns: int = MAX_TURNS
) -> list[Outcome]:
    """Every question of the task set, one after the other."""
    with tempfile.TemporaryDirectory(prefix="loopbench-agents-") as scratch:
        return [
            await ask(base_url, model, t.id, t.question, Path(scratch), max_turns)
            for t in load_tasks(tasks).tasks
        ]


def write(
    out: Path, entry: dict[str, Any], outcomes: list[Outcome], max_turns: int = MAX_TURNS
) -> Path:
    """``OUT/<model>.jsonl`` (one line per question) and ``OUT/<model>.md`` (a table)."""
    out.mkdir(parents=True, exist_ok=True)
    model = str(entry["id"])
    lines = out / f"{slug(model)}.jsonl"
    served = {"model": model, "model_sha256": entry.get("sha256"), "backend": entry.get("backend")}
    with open(lines, "w", encoding="utf-8") as f:
        for outcome in outcomes:
            f.write(json.dumps({**served, **asdict(outcome)}, ensure_ascii=False) + "\n")
    rows = [
        [
            o.task_id,
            o.final_output if o.error is None else f"({o.error})",
            ", ".join(f"{c['name']}({c['arguments']})" for c in o.tool_calls) or "none",
            "yes" if all(c["valid"] for c in o.tool_calls) else "no",
            o.replies,
        ]
        for o in outcomes
    ]
    head = ["task", "final output", "tool calls", "arguments valid", "replies"]
    lines.with_suffix(".md").write_text(
        f"# {model} through the OpenAI Agents SDK\n\n"
        f"sha256 `{entry.get('sha256')}`, backend {entry.get('backend')}; "
        f"`python -m lab.conformance.agents_sdk`, {len(outcomes)} questions, "
        f"max {max_turns} turns.\n\n" + table(head, rows),
        encoding="utf-8",
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = ExactParser(
        prog="python -m lab.conformance.agents_sdk", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--base-url", default=None, help="default: $LLM_BASE_URL")
    parser.add_argument("--model", default=None, help="default: the server's first model")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    parser.add_argument("--max-turns", type=int, default=MAX_TURNS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    base_url = (args.base_url or base_url_from_env()).rstrip("/")
    try:
        entries = fetch_models(base_url)
    except EvalError as exc:
        parser.exit(1, f"lab.conformance.agents_sdk: {exc}\n")
    entry = next((e for e in entries if e.get("id") == args.model), None) or (
        {"id": args.model} if args.model else entries[0]
    )
    outcomes = asyncio.run(ask_all(base_url, str(entry["id"]), args.tasks, args.max_turns))
    path = write(args.out, entry, outcomes, args.max_turns)
    print(path.with_suffix(".md").read_text(encoding="utf-8"))
    print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
