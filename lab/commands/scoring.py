"""The scoring's commands: ``rescore``, ``grader-check``, ``grader-draw``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lab.report.rescore import markdown as rescore_markdown
from lab.report.rescore import rescore
from lab.studies import grader_check, heldout


def register(commands: Any) -> None:
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
    checking = commands.add_parser(
        "grader-check",
        help="replay the labelled answer corpus through today's answer checks: agreement, "
        "false credits and refusals, every disagreement",
    )
    grader_check.add_arguments(checking)
    again.set_defaults(handler=_rescore)
    checking.set_defaults(
        handler=lambda args: grader_check.main(args.corpus, args.out, args.heldout)
    )
    draw = commands.add_parser(
        "grader-draw",
        help="draw answers at random from the committed runs for the held-out corpus "
        "(without their verdicts), to be labelled by reading",
    )
    draw.add_argument("--out", type=Path, required=True)
    draw.add_argument("--seed", type=int, default=heldout.SEED)
    draw.add_argument("--size", type=int, default=heldout.SIZE)
    draw.set_defaults(
        handler=lambda args: (
            print(
                f"drew {heldout.write_draw(Path('.'), args.out, args.size, args.seed)} answers "
                f"into {args.out}"
            )
            or 0
        )
    )


def _rescore(args: argparse.Namespace) -> int:
    results = rescore(args.files, args.tasks)
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
