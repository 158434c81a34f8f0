"""``python -m evals run``: a task set through the loop, against the servers named."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from evals.conversation import AGENTS
from evals.errors import EvalError
from evals.registry import held_by
from evals.report.compare import compare
from evals.report.summary import summarize_run_file
from evals.run.runner import EvalSettings, run_evals
from evals.run.servers import Serving
from evals.run.settings import eval_loop, resumed_settings
from evals.solvers import SOLVERS
from evals.tasks import DEFAULT_TASKS, load_tasks
from harness.client import base_url_from_env
from harness.config import add_loop_flags, loop_from_args
from harness.display import printable
from harness.keys import key_from, refused_on_command_line
from harness.presets import add_preset_flags, preset_from_args
from harness.providers import APIS, base_url_for

INTERRUPTED = (
    "interrupted; every finished task is kept in the .partial file. Go on with "
    "`loopbench eval --resume RUN_FILE.partial` (any run, a tau2 one too; where the servers "
    "are and --concurrency are not kept: give them again)."
)


def register(commands: Any) -> None:
    run = commands.add_parser("run", help="run a task set against the server at LLM_BASE_URL")
    run.add_argument(
        "--tasks",
        type=Path,
        default=DEFAULT_TASKS,
        help="task file (JSON, or YAML by its suffix; python -m evals check-tasks checks one)",
    )
    run.add_argument("--epochs", type=int, default=1)
    add_run_flags(run)
    run.set_defaults(handler=handle)


def add_run_flags(run: argparse.ArgumentParser) -> None:
    """The flags of an eval: servers, sampling, the loop's settings, the user of a
    conversation, where the run goes (``run`` and ``tau2`` take them all)."""
    run.add_argument(
        "--base-url",
        action="append",
        metavar="URL",
        help="a server (default: $LLM_BASE_URL or http://127.0.0.1:8000/v1); repeat it to "
        "spread requests over several servers, each request going to one serving its model",
    )
    run.add_argument(
        "--api",
        choices=APIS,
        default="openai",
        help="wire shape: chat completions (openai) or Messages (anthropic)",
    )
    add_key_flags(run, "--api-key-env", "--api-key", "the servers'")
    run.add_argument("--model", help="model name to ask for (default: the server's first)")
    run.add_argument(
        "--models",
        metavar="A,B,C",
        help="several served models in one command: one run file per model, one comparison",
    )
    run.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="task runs in flight, across every model (default: as many as the servers decode "
        "at once, their slots in /v1/models; 1 for a server that decodes one at a time)",
    )
    run.add_argument(
        "--max-connections",
        type=int,
        metavar="M",
        help="requests in flight per server (default: --concurrency spread over the servers "
        "of each model)",
    )
    run.add_argument("--compare", type=Path, metavar="MD", help="write the comparison here")
    add_loop_flags(run)
    run.add_argument(
        "--approvals",
        choices=["reject", "approve", "stop"],
        default="reject",
        help="a call needing approval: decline it and go on (the default: the task set is "
        "read-only), approve it (a task set that changes its fresh workspace: a user's "
        "request, checked by an after check), or stop the task",
    )
    run.add_argument("--out", type=Path, help="run file (default: results/runs/STAMP-LABEL.jsonl)")
    run.add_argument("--label", help="name of this run in comparisons")
    run.add_argument(
        "--db",
        metavar="URL",
        help="where an sql task set's databases are: a postgresql:// URL (make serve-postgres "
        "prints one); default: SQLite files the eval builds. A password in it is never saved: "
        "give --db again with --resume, or keep it in a passfile (?passfile=PATH)",
    )
    run.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_FILE",
        help="go on with an interrupted eval (its run file or .partial): run only what is "
        "missing, with its settings; only --base-url (and --user-base-url) may change",
    )
    run.add_argument(
        "--solver",
        default="agent",
        choices=list(SOLVERS),
        help="how each task is solved: the agent loop under the preset (agent, the "
        "default), or a workflow whose steps the code fixes: "
        + "; ".join(f"{s.name}: {s.help}" for s in SOLVERS.values() if s.name != "agent"),
    )
    user = run.add_argument_group("the simulated user of a task that is a conversation")
    user.add_argument(
        "--user-model", metavar="NAME", help="the user's model (default: the agent's model)"
    )
    user.add_argument(
        "--user-base-url",
        metavar="URL",
        help="an OpenAI-shaped server for the user (default: the eval's own servers)",
    )
    add_key_flags(user, "--user-api-key-env", "--user-api-key", "the user's server's")
    user.add_argument(
        "--user-temperature",
        type=float,
        metavar="T",
        help="the user's sampling temperature (default: --temperature); its seed is the epoch's",
    )
    user.add_argument(
        "--max-user-turns",
        type=int,
        default=30,
        metavar="N",
        help="the user's messages per conversation before it ends as a step cap (default 30)",
    )
    user.add_argument(
        "--agent",
        choices=AGENTS,
        default="model",
        help="who answers the user: the model, or a scripted agent: oracle (the task's gold "
        "calls and words, the ceiling under this user) or idle (nothing, the floor)",
    )
    add_preset_flags(
        run,
        default=None,
        unset="default: the preset of the environment the tasks run on; files: all-helps, "
        "the SQL analyst: analyst, MCP servers: penalized, tau2: no-helpers",
    )


def chosen_preset(args: argparse.Namespace) -> str:
    """The preset named, or the default of the environment the tasks run on (tasks on
    environments whose defaults differ must name one)."""
    if args.preset is not None:
        return str(args.preset)
    held = held_by(load_tasks(args.tasks).tasks)
    defaults = {e.default_preset for e, _ in held}
    if len(defaults) != 1:
        which = ", ".join(f"{e.name}: {e.default_preset}" for e, _ in held)
        raise EvalError(
            f"these tasks run on environments whose default presets differ ({which}): "
            "name one with --preset"
        )
    return defaults.pop()


def add_key_flags(parser: Any, env: str, refused: str, whose: str) -> None:
    """``env VAR`` on ``parser`` (a parser or a group of one): the environment variable an
    endpoint's key is read from; ``refused``: a key given on the command line, refused with
    why (its value is never read)."""
    parser.add_argument(
        env,
        metavar="VAR",
        help=f"the environment variable holding {whose} API key, sent as the wire shape "
        "requires and never written (default: OPENAI_API_KEY, or ANTHROPIC_API_KEY for "
        "--api anthropic, when set)",
    )
    parser.add_argument(refused, metavar="KEY", help=argparse.SUPPRESS)


def check_keys(args: argparse.Namespace) -> None:
    """A key given as a flag's value is refused; a named variable must be set."""
    for refused, env in (("api_key", "--api-key-env"), ("user_api_key", "--user-api-key-env")):
        if getattr(args, refused, None) is not None:
            flag = "--" + refused.replace("_", "-")
            raise refused_on_command_line(flag, env)
    key_from(args.api, args.api_key_env)
    if args.user_api_key_env is not None:
        key_from("openai", args.user_api_key_env, "--user-api-key-env")


def handle(args: argparse.Namespace, after: Callable[[list[Path]], None] | None = None) -> int:
    """Run the evals ``args`` ask for; ``after``: what a command prints of their run files."""
    if args.epochs < 1:
        raise EvalError("--epochs must be at least 1")
    try:
        outs = _run(args)
    except KeyboardInterrupt:
        print(f"evals: {INTERRUPTED}", file=sys.stderr)
        return 130
    if after is not None:
        after(outs)
    return 0


def _run(args: argparse.Namespace) -> list[Path]:
    check_keys(args)
    urls = [base_url_for(args.api, u) for u in (args.base_url or [base_url_from_env()])]
    if args.model and args.models:
        raise EvalError("give --model or --models, not both")
    models: list[str | None] = [m for m in (args.models or "").split(",") if m] or [args.model]
    if len(models) > 1 and (args.out or args.resume):
        raise EvalError("--out and --resume name one run file; use them with one model")
    if args.out is not None and (args.out.is_dir() or args.out.suffix != ".jsonl"):
        raise EvalError(f"--out {args.out}: name the run file to write, ending in .jsonl")
    spread = {
        "more_base_urls": tuple(urls[1:]),
        "concurrency": args.concurrency,
        "per_server": args.max_connections,
        "api_key_env": args.api_key_env,
    }
    chosen = None  # a resumed run keeps its own preset
    if not args.resume:
        args.preset = chosen_preset(args)
        # Read once: its limits under the loop's flags, its settings with theirs.
        chosen = preset_from_args(args)
    limits = chosen.limits if chosen is not None else {}
    # A command's own loop defaults (tau2: no cap on the agent's model calls), then the flags.
    loop = loop_from_args(args, eval_loop(**getattr(args, "loop_base", {})), limits)
    if loop.temperature is not None and not 0 <= loop.temperature <= 2:
        raise EvalError("--temperature must be between 0 and 2")
    if args.user_temperature is not None and not 0 <= args.user_temperature <= 2:
        raise EvalError("--user-temperature must be between 0 and 2")
    for flag in ("max_user_turns", "max_steps", "max_errors"):
        if (value := getattr(args, flag, None)) is not None and value < 1:
            raise EvalError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.api != "openai" and (loop.temperature is not None or loop.seed is not None):
        raise EvalError(
            f"--temperature and --seed are sent in the openai shape only, not {args.api}"
        )
    if args.resume:
        resumed = resumed_settings(args.resume, urls[0], db=args.db)
        resumed = replace(resumed, serving=replace(resumed.serving, **spread))
        if args.user_base_url is not None:  # where the user's model is may move, as --base-url
            resumed = replace(resumed, user_base_url=args.user_base_url)
        resumed = replace(resumed, user_api_key_env=args.user_api_key_env)
        evals = [resumed]
    else:
        assert chosen is not None  # named, or the default of the tasks' environment
        evals = [
            EvalSettings(
                serving=Serving(urls[0], api=args.api, model=model, **spread),
                tasks=args.tasks,
                epochs=args.epochs,
                loop=loop,
                label=f"{args.label}-{model}" if args.label and len(models) > 1 else args.label,
                out=args.out,
                approvals=args.approvals,
                preset=chosen,
                db=args.db,
                solver=args.solver,
                user_model=args.user_model,
                user_base_url=args.user_base_url,
                user_api_key_env=args.user_api_key_env,
                user_temperature=args.user_temperature,
                max_user_turns=args.max_user_turns,
                max_steps=getattr(args, "max_steps", None),
                max_errors=getattr(args, "max_errors", None),
                seeds=getattr(args, "seeds", "epoch"),
                agent=args.agent,
            )
            for model in models
        ]
    outs = asyncio.run(
        run_evals(evals, echo=echo, bar=sys.stderr.isatty(), summarize=summarize_run_file)
    )
    if len(outs) > 1 or args.compare:
        print(compare(outs, args.compare))
        if args.compare:
            print(f"wrote {args.compare}")
    return outs


def echo(line: str) -> None:
    print(printable(line), flush=True)
