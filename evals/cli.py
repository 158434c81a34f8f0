"""``python -m evals``: run, sweep, bfcl, rescore, adversaries, grader-check, power, compare,
generate, view, export, experiment(s), bench."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from pathlib import Path

from evals.bfcl.cli import add_bfcl_arguments, bfcl_command
from evals.report import power
from evals.report.compare import compare, paired_table
from evals.report.stats import PairingError
from evals.report.view import write_report
from evals.run.runner import RESULTS, EvalError, EvalSettings, run_evals
from evals.run.settings import resumed_settings
from evals.scoring import grader_check
from evals.scoring.rescore import RescoreError, rescore
from evals.scoring.rescore import markdown as rescore_markdown
from evals.studies import adversaries
from evals.studies.experiments import EXPERIMENTS, run_experiments, write
from evals.studies.serving import PARTS as BENCH_PARTS
from evals.studies.serving import rerender, run_bench
from evals.studies.sweep import SweepSettings, rewrite, run_sweep
from evals.tasks import DEFAULT_TASKS, TaskFileError, generate
from harness.client import base_url_from_env
from harness.policies.presets import UnknownPolicy, add_policy_flags, policy_from_args
from harness.providers import APIS, base_url_for
from harness.tool_errors import TOOL_ERROR_POLICIES

RUNS = RESULTS / "runs"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a task set against the server at LLM_BASE_URL")
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
    run.add_argument("--model", help="model name to ask for (default: the server's first)")
    run.add_argument(
        "--models",
        metavar="A,B,C",
        help="several served models in one command: one run file per model, one comparison",
    )
    run.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="N",
        help="task runs in flight, across every model (default 1: one after another)",
    )
    run.add_argument(
        "--max-connections",
        type=int,
        metavar="M",
        help="requests in flight per server (default: --concurrency spread over the servers "
        "of each model)",
    )
    run.add_argument("--compare", type=Path, metavar="MD", help="write the comparison here")
    run.add_argument("--tasks", type=Path, default=DEFAULT_TASKS, help="task file (JSON)")
    run.add_argument("--epochs", type=int, default=1)
    run.add_argument(
        "--temperature",
        type=float,
        metavar="T",
        help="sample at this temperature on every request (default: greedy, so epochs repeat)",
    )
    run.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="sampling seed: epoch e of each task asks for S + e - 1 (recorded in each record)",
    )
    run.add_argument("--max-turns", type=int, default=10)
    run.add_argument("--budget", type=float, default=None, help="USD per task run")
    run.add_argument("--tool-errors", choices=TOOL_ERROR_POLICIES, default="descriptive")
    run.add_argument(
        "--approvals",
        choices=["reject", "stop"],
        default="reject",
        help="a call needing approval: decline it and go on, or stop the task",
    )
    run.add_argument("--out", type=Path, help="run file (default: results/runs/STAMP-LABEL.jsonl)")
    run.add_argument("--label", help="name of this run in comparisons")
    run.add_argument("--task-timeout", type=float, metavar="S", help="wall seconds per task run")
    run.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_FILE",
        help="go on with an interrupted eval (its run file or .partial): run only what is "
        "missing, with its settings; only --base-url may change",
    )
    add_policy_flags(run)
    sweep = commands.add_parser("sweep", help="the task set under each policy; results/sweep.*")
    sweep.add_argument("--policies", help="preset names, comma-separated")
    sweep.add_argument(
        "--from-runs",
        nargs="+",
        type=Path,
        metavar="RUN_FILE",
        help="run nothing: write the sweep's report from these run files",
    )
    sweep.add_argument(
        "--models",
        help="comma-separated; served here one at a time (serve_local, --backend) unless "
        "--base-url names a server that serves them",
    )
    sweep.add_argument("--base-url", help="ask every model of this server instead")
    sweep.add_argument("--epochs", type=int, default=1)
    sweep.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    sweep.add_argument("--max-turns", type=int, default=10)
    sweep.add_argument("--task-timeout", type=float, metavar="S")
    sweep.add_argument("--backend", default="llama", help="for the servers the sweep starts")
    sweep.add_argument("--threads", type=int)
    sweep.add_argument("--tool-grammar", default="lazy")
    sweep.add_argument("--out", type=Path, default=Path("results"))
    bfcl = commands.add_parser(
        "bfcl",
        help="BFCL's function-calling items against a server, judged by BFCL's own checker; "
        "results/bfcl/",
    )
    add_bfcl_arguments(bfcl)
    one = commands.add_parser("experiment", help="run one of the chapter's experiments")
    one.add_argument("name", choices=sorted(EXPERIMENTS))
    every = commands.add_parser("experiments", help="run them all; write results/experiments.*")
    every.add_argument("--out", type=Path, default=Path("results"))
    bench = commands.add_parser("bench", help="benchmarks; write results/bench.md and .json")
    bench.add_argument("--parts", nargs="+", choices=sorted(BENCH_PARTS), default=list(BENCH_PARTS))
    bench.add_argument("--out", type=Path, default=Path("results"))
    bench.add_argument(
        "--render-only", action="store_true", help="rewrite bench.md from bench.json; run nothing"
    )
    cmp = commands.add_parser("compare", help="compare run files side by side")
    cmp.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    cmp.add_argument("--out", type=Path, help="write the Markdown table here")
    cmp.add_argument("--plots", type=Path, help="write PNG plots into this folder")
    cmp.add_argument(
        "--paired",
        action="store_true",
        help="two run files over the same tasks: the difference with a paired bootstrap "
        "interval, McNemar's exact test, and the tasks each got that the other missed",
    )
    again = commands.add_parser(
        "rescore", help="apply today's checks to recorded runs; rewrite their verdicts"
    )
    again.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    again.add_argument(
        "--tasks", type=Path, help="the task file to score with (default: the one each run names)"
    )
    again.add_argument(
        "--report", type=Path, help="also write each run's first and current score here (.md)"
    )
    adv = commands.add_parser(
        "adversaries",
        help="judge the grader: strategies derived from each task's typed answer, then the "
        "scripted adversaries and the oracle under every preset; results/adversaries-TASKSET.*",
    )
    adv.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    adv.add_argument("--base-url", help="a running scripted server (default: one in-process)")
    adv.add_argument("--out", type=Path, default=Path("results"))
    adv.add_argument(
        "--strategies-only",
        action="store_true",
        help="the strategies derived from each task's typed answer and the oracle under every "
        "preset, not the scripted adversaries",
    )
    power.add_arguments(
        commands.add_parser(
            "power",
            help="the smallest difference a task set can detect (80 % power, 5 % significance) "
            "and how many tasks a given difference needs",
        )
    )
    grader_check.add_arguments(
        commands.add_parser(
            "grader-check",
            help="replay the labelled answer corpus through today's answer checks: agreement, "
            "false credits and refusals, every disagreement",
        )
    )
    gen = commands.add_parser(
        "generate",
        help="write a generated task set (each task over its own workspace) that --tasks reads",
    )
    gen.add_argument(
        "--split",
        choices=sorted(generate.SPLITS),
        help="dev: seeds 0-99, to tune on; test: seeds 1000-1099, to report on (picks the "
        "split's first seed when --seed is not given; recorded in the task set's name)",
    )
    gen.add_argument("--seed", type=int, help="default: the split's first seed, else 0")
    gen.add_argument("--n", type=int, default=60, help="how many tasks (default 60)")
    gen.add_argument("--out", type=Path, required=True, help="the task file to write (JSON)")
    view = commands.add_parser("view", help="write one self-contained HTML report of run files")
    view.add_argument(
        "files", nargs="*", type=Path, default=[RUNS], help="run files, or folders of them"
    )
    view.add_argument("--out", type=Path, default=Path("results/report.html"))
    export = commands.add_parser(
        "export", help="write run files as Inspect AI logs (.eval), one per run file"
    )
    export.add_argument("--format", choices=["inspect"], default="inspect")
    export.add_argument("files", nargs="+", type=Path, help="run files, or folders of them")
    export.add_argument("--out", type=Path, required=True, help="folder for the logs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "compare" and args.paired:
        return _paired(args)
    if args.command == "compare":
        print(compare(args.files, args.out, args.plots))
        return 0
    if args.command == "generate":
        return _generate(args)
    if args.command == "view":
        print(f"wrote {write_report(args.files, args.out)}")
        return 0
    if args.command == "export":
        return _export(args)
    if args.command == "rescore":
        return _rescore(args)
    if args.command == "power":
        return power.main(args)
    if args.command == "grader-check":
        return grader_check.main(args.corpus, args.out)
    if args.command == "adversaries":
        return adversaries.main(args.tasks, args.base_url, args.out, args.strategies_only)
    if args.command == "bench" and args.render_only:
        rerender(args.out)
        print(f"wrote {args.out / 'bench.md'} from {args.out / 'bench.json'}")
        return 0
    if args.command == "bench":
        run_bench(args.parts, args.out, echo=lambda line: print(line, flush=True))
        print(f"wrote {args.out / 'bench.md'} and {args.out / 'bench.json'}")
        return 0
    if args.command == "bfcl":
        return bfcl_command(args)
    if args.command == "experiment":
        (result,) = asyncio.run(run_experiments([args.name]))
        print(result.markdown())
        return 0
    if args.command == "experiments":
        results = asyncio.run(run_experiments(list(EXPERIMENTS)))
        write(results, args.out)
        print(f"wrote {args.out / 'experiments.md'} and {args.out / 'experiments.json'}")
        return 0
    if args.epochs < 1:
        raise SystemExit("evals: --epochs must be at least 1")
    try:
        if args.command == "sweep":
            return _sweep(args)
        _run(args)
    except (EvalError, TaskFileError, UnknownPolicy) as exc:
        print(f"evals: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "evals: interrupted; every finished task is kept in the .partial file. Go on with "
            "`python -m evals run --resume RUN_FILE.partial`.",
            file=sys.stderr,
        )
        return 130
    return 0


def _run(args: argparse.Namespace) -> None:
    urls = [base_url_for(args.api, u) for u in (args.base_url or [base_url_from_env()])]
    if args.model and args.models:
        raise EvalError("give --model or --models, not both")
    models: list[str | None] = [m for m in (args.models or "").split(",") if m] or [args.model]
    if len(models) > 1 and (args.out or args.resume):
        raise EvalError("--out and --resume name one run file; use them with one model")
    if args.max_connections is not None and args.max_connections < 1:
        raise EvalError("--max-connections must be at least 1")
    spread = {
        "more_base_urls": tuple(urls[1:]),
        "concurrency": args.concurrency,
        "per_server": args.max_connections,
    }
    if args.temperature is not None and not 0 <= args.temperature <= 2:
        raise EvalError("--temperature must be between 0 and 2")
    if args.api != "openai" and (args.temperature is not None or args.seed is not None):
        raise EvalError(
            f"--temperature and --seed are sent in the openai shape only, not {args.api}"
        )
    if args.resume:
        evals = [replace(resumed_settings(args.resume, urls[0]), **spread)]
    else:
        evals = [
            EvalSettings(
                base_url=urls[0],
                api=args.api,
                model=model,
                tasks=args.tasks,
                epochs=args.epochs,
                max_turns=args.max_turns,
                budget_usd=args.budget,
                tool_errors=args.tool_errors,
                label=f"{args.label}-{model}" if args.label and len(models) > 1 else args.label,
                out=args.out,
                approvals=args.approvals,
                policy=policy_from_args(args),
                task_timeout_s=args.task_timeout,
                temperature=args.temperature,
                seed=args.seed,
                **spread,
            )
            for model in models
        ]
    outs = asyncio.run(run_evals(evals, echo=_echo, bar=sys.stderr.isatty()))
    if len(outs) > 1 or args.compare:
        print(compare(outs, args.compare))
        if args.compare:
            print(f"wrote {args.compare}")


def _generate(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else generate.default_seed(args.split or "dev")
    if args.n < 1:
        print("evals generate: --n must be at least 1", file=sys.stderr)
        return 2
    out = generate.write(seed, args.n, args.out, args.split)
    print(f"wrote {out}: {generate.set_name(seed, args.n, args.split)}, {args.n} tasks")
    return 0


def _paired(args: argparse.Namespace) -> int:
    if len(args.files) != 2:
        print("evals compare --paired: name two run files, A then B", file=sys.stderr)
        return 2
    try:
        text = paired_table(*args.files)
    except (PairingError, ValueError) as exc:
        print(f"evals compare --paired: {exc}", file=sys.stderr)
        return 1
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from evals.report.inspect_export import ExportError, export

    try:
        logs = export(args.files, args.out)
    except (ExportError, ValueError) as exc:
        print(f"evals export: {exc}", file=sys.stderr)
        return 1
    for log in logs:
        print(f"wrote {log}")
    print(f"open them with: inspect view --log-dir {args.out}")
    return 0


def _rescore(args: argparse.Namespace) -> int:
    try:
        results = rescore(args.files, args.tasks)
    except (RescoreError, TaskFileError, ValueError) as exc:
        print(f"evals rescore: {exc}", file=sys.stderr)
        return 1
    for result in results:
        print(result.line())
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(rescore_markdown(results), encoding="utf-8")
        print(f"wrote {args.report}")
    before = sum(r.before for r in results)
    after = sum(r.after for r in results)
    runs = sum(r.runs for r in results)
    missing = sum(len(r.missing) for r in results)
    print(
        f"rescored {len(results)} run file(s): {before}/{runs} correct before, {after}/{runs} "
        f"after; {missing} record(s) without a state file kept their verdict"
    )
    return 0


def _echo(line: str) -> None:
    print(line, flush=True)


def _sweep(args: argparse.Namespace) -> int:
    if args.from_runs:
        written = rewrite(args.from_runs, args.out)
        print("wrote " + ", ".join(map(str, written)))
        return 0
    if not args.policies:
        raise SystemExit("evals sweep: name the policies (--policies A,B) or --from-runs")
    models: list[str | None] = [m for m in (args.models or "").split(",") if m] or [None]
    settings = SweepSettings(
        policies=[p for p in args.policies.split(",") if p],
        models=models,
        base_url=args.base_url.rstrip("/") if args.base_url else None,
        epochs=args.epochs,
        tasks=args.tasks,
        max_turns=args.max_turns,
        task_timeout_s=args.task_timeout,
        backend=args.backend,
        threads=args.threads,
        tool_grammar=args.tool_grammar,
        out=args.out,
    )
    written = asyncio.run(run_sweep(settings, echo=_echo))
    print("wrote " + ", ".join(map(str, written)))
    return 0
