"""Conversation runs (τ²-bench's and any task set with a user) as the docs quote them: pass^k
over trials, the reward's parts, how conversations ended, and the simulated user's flagged
turns beside the score. ``python -m evals tau2-report`` fills docs/tau2.md from the run files
committed under ``results/tau2/``; a test renders the blocks again and compares."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.record import RunRecord, Tau2Data, committed, is_error, read_runs
from evals.report.docs import fill
from evals.report.markdown import table
from evals.report.stats import accuracy, by_task, pass_hat_k, wilson
from evals.report.users import LABELS as LABEL_WORDS
from evals.report.users import RULES, agreement, user_errors
from evals.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "tau2"
PAGE = ROOT / "docs" / "tau2.md"
# The labelled sample of user turns (``python -m evals tau2-sample``, then read and labelled),
# beside the runs, not among them.
LABELS = RESULTS / "labels" / "user-turns.jsonl"
# A second sample, of conversations outside the first: where the rules' error rate is measured.
HELDOUT = RESULTS / "labels" / "heldout-turns.jsonl"
ENDS = (
    "user_stop",
    "transfer",
    "out_of_scope",
    "agent_stop",
    "capped",
    "step_cap",
    "too_many_errors",
    "agent_error",
    "user_error",
    "error",
)

# The published anchors the page sets ours beside: (model, airline, retail, telecom) as their
# sources state them (pass^1, %), on τ²'s original task sets.
ANCHORS = [
    (
        "Qwen3-4B-Instruct-2507 ([its model card](https://huggingface.co/Qwen/Qwen3-4B-Instruct-2507))",
        24.0,
        40.4,
        13.2,
    ),
    ("GPT-4.1-mini ([τ²-bench leaderboard](https://taubench.com))", 48.7, 61.4, 48.9),
]


def _who(records: Sequence[RunRecord]) -> tuple[str, str]:
    first = records[0]
    agent = str(first.spec.loop.get("agent", "model")) if first.spec.loop else "model"
    agent = first.spec.model if agent == "model" else f"{agent} (scripted)"
    talk = first.conversation
    if talk is None:
        return agent, "–"
    user = "scripted" if talk.user.scripted else str(talk.user.model)
    if talk.user.temperature:
        user += f" @ T={talk.user.temperature:g}"
    return agent, user


def conversation_runs(folder: Path = RESULTS) -> list[tuple[str, list[RunRecord]]]:
    """Every committed conversation run under ``folder``: its name and records."""
    return [(path.stem, read_runs(path)) for path in committed(folder, "*.jsonl")]


def scenarios_of(records: Sequence[RunRecord]) -> dict[str, str]:
    """Each task's user scenario, read from the task file the run names (none: no rules on
    facts)."""
    task_set = records[0].spec.task_set
    path = ROOT / "evals" / "tasks" / "tau2" / f"{str(task_set).removeprefix('tau2-')}.json"
    if not path.exists():
        return {}
    return {t.id: t.user.scenario for t in load_tasks(path).tasks if t.user is not None}


def run_row(name: str, records: Sequence[RunRecord], most_k: int = 4) -> list[object]:
    """One run: who held both sides, tasks and trials, pass^k (k = 1..trials, at most
    ``most_k``), the mean reward, how many of its rewarded conversations ended before the
    agent's first turn (the user left at once, on a task where nothing needed doing), how
    conversations ended, and the user's flagged turns."""
    judged = [r for r in records if not is_error(r)]
    agent, user = _who(records)
    trials = min((len(v) for v in by_task(judged).values()), default=0)
    # pass^1 is the accuracy with the task as the unit (each task the share of its trials).
    first = accuracy(judged) if judged else None
    curve = [pass_hat_k(judged, k) for k in range(2, min(trials, most_k) + 1)]
    rewards = [
        r.environment.reward
        for r in judged
        if isinstance(r.environment, Tau2Data) and r.environment.reward is not None
    ]
    right = [r for r in judged if r.correct]
    silent = sum(r.turns == 0 for r in right)
    ends = Counter(r.conversation.end for r in records if r.conversation is not None)
    flagged = user_errors(judged, scenarios_of(records))
    share = f"{flagged.flagged}/{flagged.turns}" if flagged.turns else "–"
    return [
        name,
        agent,
        user,
        f"{len(by_task(judged))} × {trials}",
        "–" if first is None else first.interval(),
        " / ".join(f"{v:.1%}" for v in curve if v is not None) or "–",
        f"{sum(rewards) / len(rewards):.2f}" if rewards else "–",
        f"{silent} of {len(right)}" if right else "–",
        ", ".join(f"{e} {ends[e]}" for e in ENDS if ends[e]) or "–",
        share,
        len(records) - len(judged),
    ]


HEAD = ["run", "agent", "user", "tasks × trials", "pass^1 [95 % CI]", "pass^2 … pass^k",
        "mean reward", "rewarded before the agent spoke", "ends", "user turns flagged",
        "errors"]  # fmt: skip


def runs_table(folder: Path = RESULTS) -> str:
    """Every committed conversation run under ``folder``, one row each, by file name."""
    rows = [run_row(path.stem, read_runs(path)) for path in committed(folder, "*.jsonl")]
    if not rows:
        return "No conversation run is committed yet.\n"
    return table(HEAD, rows)


def rules_table(folder: Path = RESULTS) -> str:
    """The user's flagged turns by rule, per committed run."""
    rows = []
    for path in committed(folder, "*.jsonl"):
        records = [r for r in read_runs(path) if not is_error(r)]
        found = user_errors(records, scenarios_of(records)) if records else None
        if found is None or not found.turns:
            continue
        rows.append([path.stem, found.turns, *(found.by_rule.get(rule, 0) for rule in RULES),
                     f"{found.flagged_conversations}/{found.conversations}"])  # fmt: skip
    if not rows:
        return "No conversation run is committed yet.\n"
    return table(["run", "user turns", *RULES, "conversations flagged"], rows)


def _labelled(path: Path) -> list[dict[str, Any]]:
    """A labelled sample's rows (one user turn each)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def labels_text(path: Path = LABELS) -> str:
    """The labelled sample: the user's error rate with its interval, how the rules meet the
    labels, and who was at fault in each failed conversation of the sample."""
    if not path.exists():
        return "No user turn is labelled yet.\n"
    rows = _labelled(path)
    turns = [row for row in rows if "turn" in row]
    found = agreement(turns)
    if not found.labelled:
        return "No user turn is labelled yet.\n"
    rate = wilson(found.errors, found.labelled)
    ok = found.labelled - found.errors
    talks = len({row["conversation"] for row in turns})
    text = (
        f"{found.labelled} user turns of {talks} conversations drawn at random (`{path.name}`), "
        f"each labelled by reading before any reward was looked at: {found.errors} are the "
        f"user's errors, {rate.interval()} (95 % interval). The rules, written after reading "
        "this sample (so this is how well they fit it, not their error rate on turns they never "
        f"saw; a fresh sample measures that), flag {found.flagged_errors} of those "
        f"{found.errors}"
        + (
            f" and {found.flagged_ok} of the {ok} turns labelled ok."
            if ok
            else "; no turn was labelled ok."
        )
    )
    faults = Counter(str(row["fault"]) for row in rows if "fault" in row)
    if faults:
        text += (
            f" Of the sample's {sum(faults.values())} failed conversations, read whole once "
            "their rewards were known: "
            + ", ".join(f"{faults[k]} {k}" for k in ("agent", "user", "both") if faults[k])
            + " at fault."
        )
    return text + "\n"


def heldout_text(path: Path = HELDOUT, second: Path | None = None) -> str:
    """The held-out sample: conversations outside the first sample, labelled blind by two
    readers; the user's error rate by the first, and the rules' error rate on turns they were
    never written from (errors they miss, ok turns they flag)."""
    second = second or path.with_suffix(".second-reader.jsonl")
    if not path.exists():
        return "No held-out sample is labelled yet.\n"
    rows = _labelled(path)
    found = agreement(rows)
    if not found.labelled:
        return "No held-out sample is labelled yet.\n"
    talks = len({row["conversation"] for row in rows})
    rate = wilson(found.errors, found.labelled)
    ok = found.labelled - found.errors
    text = (
        f"{found.labelled} user turns of {talks} other conversations, drawn at random from "
        f"those outside the first sample (`{path.name}`, `tau2-sample --seed 8 --exclude "
        f"{LABELS.name}`), labelled blind to rewards and rules: {found.errors} are the user's "
        f"errors, {rate.interval()} (95 % interval)."
    )
    if second.exists():
        other = {(r["conversation"], r["turn"]): r.get("label") for r in _labelled(second)}
        both = [r for r in rows if other.get((r["conversation"], r["turn"])) in LABEL_WORDS]
        same = sum(other[(r["conversation"], r["turn"])] == r["label"] for r in both)
        text += f" A second reader, labelling apart, agrees on {same} of {len(both)} turns."
    if found.errors:
        recall = wilson(found.flagged_errors, found.errors)
        text += (
            f" The rules, never written from these turns, flag {found.flagged_errors} of the "
            f"{found.errors} errors ({recall.interval()})"
        )
        text += (
            f" and {found.flagged_ok} of the {ok} turns labelled ok." if ok else
            "; no turn was labelled ok."
        )  # fmt: skip
    return text + "\n"


def anchors_table() -> str:
    rows = [[name, f"{a:.1f}", f"{r:.1f}", f"{t:.1f}"] for name, a, r, t in ANCHORS]
    return table(["published (pass^1, %)", "airline", "retail", "telecom"], rows)


def write_page(page: Path = PAGE, folder: Path = RESULTS) -> list[str]:
    """Fill docs/tau2.md's blocks from the committed runs; the blocks that changed."""
    blocks = {
        "tau2-runs": runs_table(folder),
        "tau2-user-rules": rules_table(folder),
        "tau2-anchors": anchors_table(),
        "tau2-user-labels": labels_text(),
        "tau2-user-heldout": heldout_text(),
    }
    return [name for name, text in blocks.items() if fill(page, name, text)]
