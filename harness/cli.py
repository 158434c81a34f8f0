"""``python -m harness run | resume | show``: agent runs against the provider at LLM_BASE_URL."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from harness.approvals import NotPending, approve, reject
from harness.cancel import CancelToken
from harness.client import base_url_from_env
from harness.config import LoopConfig, add_loop_flags, loop_from_args
from harness.display import printable
from harness.errors import KeyRefused
from harness.exactargs import ExactParser
from harness.loop import run_loop
from harness.persist import StateFileError, load, save
from harness.presets import (
    Preset,
    UnknownSetting,
    add_preset_flags,
    apply,
    preset_from_args,
)
from harness.prices import Prices
from harness.providers import APIS, base_url_for, provider
from harness.scenarios import SCENARIO_TASKS
from harness.setup import Setup
from harness.state import RunState, new_run
from harness.subagent import research_tool
from harness.tools import Tool, default_tools
from harness.trace import Recorder
from harness.workspace import Workspace, create_workspace

FINISHED = ("completed", "failed")


def _loop_flags(p: argparse.ArgumentParser) -> None:
    add_loop_flags(p)
    p.add_argument(
        "--stop-on-permanent-error",
        action="store_true",
        help="stop when a tool fails in a way no retry can fix",
    )
    p.add_argument("--dedupe-all", action="store_true", help="dedupe every tool (unsafe)")
    p.add_argument("--price-in", type=float, default=2.00, help="USD per million input tokens")
    p.add_argument("--price-out", type=float, default=12.00, help="USD per million output tokens")


def _parser() -> argparse.ArgumentParser:
    parser = ExactParser(prog="python -m harness")
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
    run.add_argument(
        "--base-url",
        help="default: $LLM_BASE_URL or http://127.0.0.1:8000/v1 (the root will do for anthropic)",
    )
    run.add_argument(
        "--api",
        choices=APIS,
        default="openai",
        help="wire shape: chat completions (openai) or Messages (anthropic)",
    )
    run.add_argument("--workspace", type=Path, help="default: STATE_DIR/RUN_ID/workspace")
    _loop_flags(run)
    resume = commands.add_parser("resume", help="go on with a saved run")
    resume.add_argument("run_id")
    decision = resume.add_mutually_exclusive_group()
    decision.add_argument("--approve", metavar="CALL_ID")
    decision.add_argument("--reject", metavar="CALL_ID")
    resume.add_argument("--reason", default="", help="why the call was rejected")
    resume.add_argument("--base-url", help="default: the run's own")
    show = commands.add_parser("show", help="print a saved run")
    show.add_argument("run_id")
    for p in (run, resume, show):
        p.add_argument("--state-dir", type=Path, default=Path("runs"))
        p.add_argument("--trace", type=Path, help="default: STATE_DIR/RUN_ID.trace.jsonl")
        p.add_argument("--json", action="store_true", help="print one JSON object")
    add_preset_flags(run)  # last: a setting's flag that clashes with the command's is left out
    return parser


def _config(args: argparse.Namespace, chosen: Preset) -> LoopConfig:
    base = LoopConfig(
        stop_on_permanent_error=args.stop_on_permanent_error,
        prices=Prices(args.price_in, args.price_out),
    )
    config = apply(loop_from_args(args, base), chosen)
    if args.dedupe_all:
        config = replace(config.with_settings(dedupe=True), dedupe_all=True)
    return config


def _config_from(meta: dict[str, Any]) -> LoopConfig:
    return LoopConfig.from_dict(meta["config"])


def _tools(state: RunState, base_url: str) -> list[Tool]:
    tools = default_tools()
    if state.meta.get("scenario") == "research":
        child = LoopConfig(max_turns=5)
        api = state.meta.get("api", "openai")
        tools.append(research_tool(base_url, "scripted:runaway", child, api=api))
    return tools


async def _drive(state: RunState, args: argparse.Namespace, config: LoopConfig) -> RunState:
    base_url = args.base_url or state.meta["base_url"]
    trace = args.trace or args.state_dir / f"{state.run_id}.trace.jsonl"
    recorder = Recorder(args.state_dir, trace, on_progress=None if args.json else _show_progress)
    token = CancelToken()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, token.cancel, "the user pressed Ctrl-C")
    async with provider(state.meta.get("api", "openai"), base_url) as client:
        workspace = Workspace(state.meta["workspace"])
        return await run_loop(
            state, client, Setup(_tools(state, base_url), workspace), config, recorder, token
        )


def _show_progress(tool_name: str, label: str) -> None:
    print(f"   {tool_name}: {printable(label)}", flush=True)


def _summary_line(label: str, state: RunState) -> str:
    return (
        f"{label:<15} turns={state.turns}  tools={state.tool_runs}  in={state.prompt_tokens}  "
        f"out={state.completion_tokens}  cost=${state.cost_usd:.6f}  ms={state.wall_ms:.0f}  "
        f"status={state.status}"
    )


def _print(state: RunState, as_json: bool) -> None:
    if as_json:
        print(json.dumps(state.summary()))
        return
    label = f"{state.meta.get('scenario') or 'task'}, cap {state.meta['config']['max_turns']}"
    print(_summary_line(label, state))
    if state.answer is not None:
        print(f'   answer: "{printable(state.answer)}"')
    if state.error:
        print(f"   error: {printable(state.error)}")
    if state.interruption:
        print(f"   interruption: {json.dumps(state.interruption)}")
    if state.child_cost_usd:
        print(
            f"   subagent cost: ${state.child_cost_usd:.6f}  "
            f"total: ${state.cost_usd + state.child_cost_usd:.6f}"
        )
    print("   per-turn prompt tokens: " + ", ".join(map(str, state.per_turn_prompt_tokens)))
    print(f"   run id: {state.run_id}")


def _start(args: argparse.Namespace) -> RunState:
    if args.max_turns is not None and args.max_turns < 1:
        raise SystemExit("harness: --max-turns must be at least 1")
    model = args.model or (f"scripted:{args.scenario}" if args.scenario else None)
    if model is None:
        raise SystemExit("harness: --task needs --model (the name the provider serves)")
    task = SCENARIO_TASKS[args.scenario] if args.scenario else args.task
    try:
        chosen = preset_from_args(args)
    except UnknownSetting as exc:
        raise SystemExit(f"harness: {exc}") from exc
    config = _config(args, chosen)
    state = new_run(model, task)
    folder = args.workspace or args.state_dir / state.run_id / "workspace"
    state.meta = {
        "scenario": args.scenario,
        "preset": chosen.record(),
        "workspace": str(create_workspace(folder).root),
        "base_url": base_url_for(args.api, args.base_url or base_url_from_env()),
        "api": args.api,
        "config": asdict(config),
    }
    save(state, args.state_dir)
    return asyncio.run(_drive(state, args, config))


def _resume(args: argparse.Namespace) -> RunState:
    state = load(args.state_dir, args.run_id)
    if state.status in FINISHED:
        raise StateFileError(
            f"run {state.run_id} has already finished ({state.status}); there is nothing to resume"
        )
    if args.approve:
        approve(state, args.approve)
    elif args.reject:
        reject(state, args.reject, args.reason)
    save(state, args.state_dir)
    return asyncio.run(_drive(state, args, _config_from(state.meta)))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "show":
            state = load(args.state_dir, args.run_id)
        elif args.command == "resume":
            state = _resume(args)
        else:
            state = _start(args)
    except (StateFileError, NotPending) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    except KeyRefused as exc:  # the run is saved; resume it once the key is right
        print(f"harness: {exc}", file=sys.stderr)
        return 1
    _print(state, args.json)
    return 1 if state.status == "failed" else 0
