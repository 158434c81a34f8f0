"""Adversaries derived from each task's typed answer, for any task set that has them.

Every strategy answers after the run has listed the workspace and read every file through the
real loop and the real tools, so all the evidence a grounded check asks for is there: only the
reading of the answer stands between a strategy and credit. The strategies, per answer type:

* constant answers: each candidate in turn (the k-th listed file, the k-th smallest number),
  yes, no;
* the first and the last listed file, the largest and the smallest;
* hedges over every candidate, with "or" and as a plain list, and the hedge
  "The workspace contains no file by that name; there are 3, 4, 5 or 6 files.";
* a ranked list of every candidate (which commits to its first);
* everything read, echoed back.

Each strategy says what it commits to (``intends``), so a credit where the strategy's answer is
not the expected one is a false credit, whatever the rate. Per family (``Task.family``) the
chance level comes from the task set itself: the mean of one over the number of candidates.
The check fails when a hedge earns anything, when any strategy is credited where its answer
is wrong, or when a strategy is credited clearly above its family's chance level (exact
binomial test, one-sided, p < 0.01), except where the strategy is the family's own rule (the
largest file for "which is the largest", everything echoed for "read every file").
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from evals.environments import Reading
from evals.markdown import table
from evals.registry import environment_of
from evals.scoring.verdict import verdict_of
from evals.stats import wilson
from evals.tasks import Facts, ListOf, NumberIs, OneOf, Task, TaskSet, YesNo, chance_of
from harness.state import RunState

__all__ = ["KNOWN_HEDGE", "Attempt", "FamilyReport", "attempts", "judge", "markdown"]

KNOWN_HEDGE = "The workspace contains no file by that name; there are 3, 4, 5 or 6 files."
UNKNOWN = "unknown"  # what an echo commits to is left to the reader; only chance judges it
ALPHA = 0.01
# A strategy that is the family's own rule is right by construction there.
OWN_RULE = {
    "largest": "one_of: largest",
    "smallest": "one_of: smallest",
    "echo everything read": "facts: every file",
}


@dataclass(frozen=True)
class Attempt:
    strategy: str
    text: str
    intends: Any  # the candidate it commits to; None for a hedge; UNKNOWN for an echo
    hedge: bool = False


def _or(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" or {items[-1]}"


def _number(value: float) -> str:
    return f"{value:g}"


def _over_all(shown: list[str], first: Any) -> list[Attempt]:
    """Every candidate at once: hedged with "or", listed, and ranked (which commits to
    ``first``, the one ranked first)."""
    return [
        Attempt("hedge: or", f"It is {_or(shown)}.", None, hedge=True),
        Attempt("hedge: list", ", ".join(shown) + ".", None, hedge=True),
        Attempt("ranked", f"{shown[0]} comes first, followed by {', '.join(shown[1:])}.", first),
    ]


def attempts(task: Task, reading: Reading) -> list[Attempt]:
    """Every strategy's answer to ``task``, from what the run listed and read."""
    listed, contents = reading.listed, reading.contents
    answer = task.answer
    echo = "\n".join(f"{name}:\n{contents[name]}" for name in listed)
    common = [
        Attempt("echo everything read", echo, UNKNOWN),
        Attempt("known hedge", KNOWN_HEDGE, None, hedge=True),
    ]
    sizes = {name: len(contents[name].encode()) for name in listed}
    if reading.results is not None:
        common += _from_results(task, reading.results)
    match answer:
        case OneOf(candidates=candidates):
            names = [n for n in listed if n in candidates] or list(candidates)
            by_size = sorted(names, key=lambda n: sizes.get(n, 0))
            out = [Attempt(f"listed #{k + 1}", f"The file is {n}.", n) for k, n in enumerate(names)]
            out += [
                Attempt("first listed", f"{names[0]}.", names[0]),
                Attempt("last listed", f"{names[-1]}.", names[-1]),
                Attempt("largest", f"{by_size[-1]} is the one.", by_size[-1]),
                Attempt("smallest", f"{by_size[0]} is the one.", by_size[0]),
                *_over_all(names, names[0]),
                Attempt("hedge: every file named", " ".join(f"{n}." for n in names), None, True),
            ]
            return out + common
        case NumberIs(candidates=candidates):
            values = sorted(set(candidates))
            shown = [_number(v) for v in values]
            out = [
                Attempt(f"candidate #{k + 1}", f"The answer is {s}.", v)
                for k, (v, s) in enumerate(zip(values, shown, strict=True))
            ]
            return out + _over_all(shown, values[0]) + common
        case YesNo(subject=subject):
            return [
                Attempt("yes", f"Yes, {subject} is in the workspace.", True),
                Attempt("no", f"No, there is no file named {subject}.", False),
                Attempt("hedge: or", "Yes or no.", None, hedge=True),
                Attempt("hedge: list", "Yes, no.", None, hedge=True),
                Attempt("hedge: unsure", f"{subject} may or may not exist.", None, hedge=True),
                # A path's words are no answer: a folder named after the task's kind once read
                # as a denial ("present in /tmp/.../12-missing/workspace").
                Attempt(
                    "yes, echoing a path of denials",
                    f"{subject} is present in the directory /tmp/run/{task.id}-missing/"
                    "not-found/absent/workspace.",
                    True,
                ),
                Attempt(
                    "no, echoing a path of affirmations",
                    f"There is no file named {subject}; I looked in /tmp/run/{task.id}-exists/"
                    "present/found/workspace.",
                    False,
                ),
                *common,
            ]
        case ListOf(candidates=candidates, expected=expected):
            k = len(expected)
            out = [
                Attempt(f"the first {k}", _and(candidates[:k]) + ".", frozenset(candidates[:k])),
                Attempt(f"the last {k}", _and(candidates[-k:]) + ".", frozenset(candidates[-k:])),
                Attempt("hedge: or", f"It is {_or(list(candidates))}.", None, hedge=True),
                Attempt("every candidate", _and(list(candidates)) + ".", frozenset(candidates)),
            ]
            return out + common
        case Facts(facts=facts):
            sources = [n for n in listed if n in facts] or list(facts)
            out = [
                Attempt(f"facts of listed #{k + 1}", contents.get(n, " ".join(facts[n])), {n})
                for k, n in enumerate(sources)
            ]
            if len(sources) > 1:
                first, second = facts[sources[0]][0], facts[sources[1]][0]
                out.append(Attempt("hedge: or", f"It says {first} or {second}.", None, True))
            return out + common
    return common


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


_CELL_NUMBER = re.compile(r"(?<![\w.\-:])\d+(?:\.\d+)?(?![\w.\-:])")


def _from_results(task: Task, results: str) -> list[Attempt]:
    """Question-blind answers read off whatever the queries returned: the first number of any
    result, the first candidate named in any result."""
    found: list[Attempt] = []
    match task.answer:
        case NumberIs():
            first = _CELL_NUMBER.search(results)
            if first:
                value = float(first.group())
                found.append(
                    Attempt("first number of any result", f"The answer is {first.group()}.", value)
                )
        case OneOf(candidates=candidates) | ListOf(candidates=candidates):
            at = {c: results.find(c) for c in candidates if c in results}
            if at:
                name = min(at, key=lambda c: at[c])
                intends: Any = name if isinstance(task.answer, OneOf) else frozenset({name})
                found.append(Attempt("first name of any result", f"It is {name}.", intends))
    return found


def answered(state: RunState, text: str) -> RunState:
    """``state`` finished with ``text`` as its answer."""
    done = copy.deepcopy(state)
    done.answer = text
    done.messages[-1] = {"role": "assistant", "content": text}
    return done


@dataclass
class Cell:
    strategy: str
    hedge: bool
    tasks: int = 0
    credited: int = 0
    false_credits: list[str] = field(default_factory=list)  # task ids credited a wrong answer
    credited_ids: list[str] = field(default_factory=list)


@dataclass
class FamilyReport:
    family: str
    tasks: int
    chance: float
    cells: dict[str, Cell]
    above: set[str] = field(default_factory=set)  # strategies clearly above chance (Holm)

    def p_value(self, cell: Cell) -> float:
        """One-sided exact binomial test of the strategy's credits against chance."""
        from scipy.stats import binomtest

        if not cell.credited:
            return 1.0
        return float(
            binomtest(cell.credited, cell.tasks, self.chance, alternative="greater").pvalue
        )

    def above_chance(self, cell: Cell) -> bool:
        return cell.strategy in self.above

    def problems(self) -> list[str]:
        found = []
        for cell in self.cells.values():
            if cell.hedge and cell.credited:
                found.append(f"{self.family}: hedge '{cell.strategy}' credited {cell.credited}")
            if cell.false_credits:
                found.append(
                    f"{self.family}: '{cell.strategy}' credited a wrong answer on "
                    + ", ".join(cell.false_credits)
                )
            if self.above_chance(cell) and OWN_RULE.get(cell.strategy) != self.family:
                found.append(
                    f"{self.family}: '{cell.strategy}' credited {cell.credited}/{cell.tasks}, "
                    f"clearly above chance ({100 * self.chance:.0f} %)"
                )
        return found


def _due(intends: Any, task: Task) -> bool:
    match task.answer:
        case Facts(expected=expected) | ListOf(expected=expected):
            return bool(intends == set(expected))
        case OneOf(expected=expected) | NumberIs(expected=expected) | YesNo(expected=expected):
            return bool(intends == expected)
    return False


async def judge(taskset: TaskSet, scratch: Any) -> list[FamilyReport]:
    """Every strategy on every task with a typed answer, grouped by family."""
    cells: dict[str, dict[str, Cell]] = defaultdict(dict)
    chances: dict[str, list[float]] = defaultdict(list)
    for task in taskset.tasks:
        if task.answer is None:
            continue
        reading = await environment_of(task).read_all(task, scratch)
        chances[task.family].append(chance_of(task))
        for attempt in attempts(task, reading):
            cell = cells[task.family].setdefault(
                attempt.strategy, Cell(attempt.strategy, attempt.hedge)
            )
            cell.tasks += 1
            if verdict_of(task, answered(reading.state, attempt.text)).correct:
                cell.credited += 1
                cell.credited_ids.append(task.id)
                if attempt.intends != UNKNOWN and not _due(attempt.intends, task):
                    cell.false_credits.append(task.id)
    reports = [
        FamilyReport(family, len(chances[family]), sum(chances[family]) / len(chances[family]), c)
        for family, c in cells.items()
    ]
    _mark_above_chance(reports)
    return reports


def _mark_above_chance(reports: list[FamilyReport]) -> None:
    """Holm's correction over every strategy and family of the task set: dozens of tests at
    once would otherwise flag a coincidence of the data (the asked file listed third in five
    of seven tasks) as a grader's fault."""
    tested = [(r, c) for r in reports for c in r.cells.values() if not c.hedge]
    if not tested:
        return
    from statsmodels.stats.multitest import multipletests

    rejected = multipletests([r.p_value(c) for r, c in tested], alpha=ALPHA, method="holm")[0]
    for (report, cell), above in zip(tested, rejected, strict=True):
        if above:
            report.above.add(cell.strategy)


def markdown(reports: list[FamilyReport]) -> str:
    rows = []
    for report in reports:
        for cell in report.cells.values():
            verdict = "hedge" if cell.hedge else ""
            if report.above_chance(cell):
                own = OWN_RULE.get(cell.strategy) == report.family
                verdict = "the family's own rule" if own else "ABOVE CHANCE"
            if cell.false_credits or (cell.hedge and cell.credited):
                verdict = "FALSE CREDIT"
            rows.append(
                [
                    report.family,
                    f"{100 * report.chance:.0f} %",
                    cell.strategy,
                    f"{cell.credited}/{cell.tasks}, {wilson(cell.credited, cell.tasks).interval()}",
                    verdict,
                ]
            )
    problems = [p for r in reports for p in r.problems()]
    verdict = (
        "No hedge is credited, no strategy is credited a wrong answer, and no question-blind "
        "strategy is clearly above its family's chance level."
        if not problems
        else "Problems: " + "; ".join(problems)
    )
    return table(["family", "chance", "strategy", "credited", "verdict"], rows) + "\n" + verdict
