"""``python -m harness run``: one agent run against the provider at ``LLM_BASE_URL``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from harness.client import ProviderClient, base_url_from_env
from harness.loop import SYSTEM_PROMPT, LoopConfig, run_loop
from harness.policies import TOOL_ERROR_POLICIES
from harness.prices import Prices
from harness.scenarios import SCENARIO_TASKS
from harness.state import RunState, new_run
from harness.tools import default_tools
from harness.workspace import create_workspace


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run one task through the agent loop")
    what = run.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--scenario",
        choices=sorted(SCENARIO_TASKS),
        help="a scripted scenario with its own task (model scripted:NAME)",
    )
    what.add_argument("--task", help="the user's request")
    run.add_argument("--model", help="model name sent to the provider")
    run.add_argument("--base-url", default=None, help="default: $LLM_BASE_URL or %(default)s")
    run.add_argument("--max-turns", type=int, default=20)
    run.add_argument("--budget", type=float, default=None, help="stop once this many USD are spent")
    run.add_argument(
        "--tool-errors",
        choices=TOOL_ERROR_POLICIES,
        default="descriptive",
        help="how a failed tool call is worded for the model (fatal stops the run)",
    )
    run.add_argument("--price-in", type=float, default=2.00, help="USD per million input tokens")
    run.add_argument("--price-out", type=float, default=12.00, help="USD per million output tokens")
    run.add_argument(
        "--workspace", type=Path, help="folder to work in (default: runs/RUN_ID/workspace)"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _line(label: str, state: RunState) -> str:
    return (
        f"{label:<15} turns={state.turns}  tools={state.tool_runs}  in={state.prompt_tokens}  "
        f"out={state.completion_tokens}  cost=${state.cost_usd:.6f}  ms={state.wall_ms:.0f}  "
        f"status={state.status}"
    )


def _print_human(label: str, state: RunState) -> None:
    print(_line(label, state))
    if state.answer is not None:
        print(f'   answer: "{state.answer}"')
    if state.error:
        print(f"   error: {state.error}")
    if state.interruption:
        print(f"   interruption: {json.dumps(state.interruption)}")
    print("   per-turn prompt tokens: " + ", ".join(map(str, state.per_turn_prompt_tokens)))


async def _run(args: argparse.Namespace) -> RunState:
    model = args.model or (f"scripted:{args.scenario}" if args.scenario else None)
    if model is None:
        raise SystemExit("harness: --task needs --model (the name the provider serves)")
    task = SCENARIO_TASKS[args.scenario] if args.scenario else args.task
    state = new_run(model, task, system=SYSTEM_PROMPT)
    workspace = create_workspace(args.workspace or Path("runs") / state.run_id / "workspace")
    config = LoopConfig(
        max_turns=args.max_turns,
        max_budget_usd=args.budget,
        tool_errors=args.tool_errors,
        prices=Prices(args.price_in, args.price_out),
    )
    async with ProviderClient(args.base_url or base_url_from_env()) as client:
        return await run_loop(state, client, default_tools(), workspace, config)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.max_turns < 1:
        raise SystemExit("harness: --max-turns must be at least 1")
    state = asyncio.run(_run(args))
    if args.json:
        print(json.dumps(state.summary()))
    else:
        _print_human(f"{args.scenario or 'task'}, cap {args.max_turns}", state)
    return 1 if state.status == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
