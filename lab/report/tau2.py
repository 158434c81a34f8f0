"""Conversation runs (τ²-bench's and any task set with a user) as the docs quote them: pass^k
over epochs, the reward's parts, how conversations ended, and the simulated user's flagged
turns beside the score. ``python -m lab tau2-report`` fills docs/tau2.md from the run files
committed under ``results/tau2/``; a test renders the blocks again and compares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals.markdown import table
from evals.record import RunRecord, committed, is_error, read_runs
from evals.stats import accuracy, by_task, pass_hat_k, wilson
from evals.tasks import load_tasks
from evals.tau2.data import Tau2Data
from evals.tau2.rules import differs
from lab.report.docs import fill
from lab.report.samples import SECOND_READER, sample_text
from lab.report.users import RULES, UserErrors, user_errors

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "tau2"
# Runs made before the conversation followed τ²'s runner's rules, and the samples read of them.
SUPERSEDED = ROOT / "results" / "superseded" / "tau2"
PAGE = ROOT / "docs" / "tau2.md"
# The labelled sample of user turns (``python -m lab tau2-sample``, then read and labelled
# by docs/tau2-user-rubric.md), beside the runs, not among them.
LABELS = RESULTS / "labels" / "user-turns.jsonl"
# The samples of the headline runs (the default model as agent and user, K epochs): one a
# run, ``headline-RUN.jsonl``, each drawn once its run is whole.
HEADLINES = RESULTS / "labels"
# The samples of the superseded runs: the first, and one of conversations outside it (where
# the rules' error rate was measured).
OLD_LABELS = SUPERSEDED / "labels" / "user-turns.jsonl"
HELDOUT = SUPERSEDED / "labels" / "heldout-turns.jsonl"
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
    agent = str((first.spec.conversation or {}).get("agent", "model"))
    agent = first.spec.model if agent == "model" else f"{agent} (scripted)"
    talk = first.conversation
    if talk is None:
        return agent, "–"
    user = "scripted" if talk.user.scripted else str(talk.user.model)
    if talk.user.temperature:
        user += f" @ T={talk.user.temperature:g}"
    return agent, user


# The committed runs of a folder, each read once: name and records, by file name.
Runs = Sequence[tuple[str, list[RunRecord]]]


def conversation_runs(folder: Path = RESULTS) -> list[tuple[str, list[RunRecord]]]:
    """Every committed conversation run under ``folder``: its name and records."""
    return [(path.stem, read_runs(path)) for path in committed(folder, "*.jsonl")]


def scenarios_of(records: Sequence[RunRecord]) -> dict[str, str]:
    """Each task's user scenario, read from the task file the run names (none: no rules on
    facts)."""
    name = str(records[0].spec.task_set).removeprefix("tau2-")
    for mode in ("solo", "gt"):  # a mode's tasks are the split's, its scenarios the same
        name = name.removesuffix(f"-{mode}")
    path = ROOT / "evals" / "tasks" / "tau2" / f"{name}.json"
    if not path.exists():
        return {}
    return {t.id: t.user.scenario for t in load_tasks(path).tasks if t.user is not None}


def settings(record: RunRecord) -> dict[str, object]:
    """The settings a run was held under, as ``evals.tau2.rules.differs`` reads them: the
    loop's and the conversation's (runs made before ``0608bb07`` keep the latter under the
    loop)."""
    return {**(record.spec.loop or {}), **(record.spec.conversation or {})}


def mode_of(records: Sequence[RunRecord]) -> str:
    """How τ² held the run's tasks: ``conversation``, ``solo`` or ``gt`` (its task set's
    suffix, as ``evals.tau2.tasks`` names a mode's set)."""
    name = str(records[0].spec.task_set or "") if records else ""
    return next((m for m in ("solo", "gt") if name.endswith(f"-{m}")), "conversation")


def _talk(record: RunRecord) -> tuple[object, ...]:
    """What a conversation held, as far as its record tells: the user's words, the agent's
    calls and last words, the end and the reward."""
    talk = record.conversation
    said = tuple(t.text for t in talk.said) if talk is not None else ()
    reward = record.environment.reward if isinstance(record.environment, Tau2Data) else None
    end = talk.end if talk is not None else None
    return said, tuple(record.tools_called or ()), record.answer, end, reward


def repeats(records: Sequence[RunRecord]) -> tuple[int, int]:
    """Of the tasks' later epochs (errors left out), how many held the talk the task's first
    epoch held, and how many there are: where greedy epochs differ, the server's arithmetic
    made them differ, and pass^k measures that."""
    first: dict[str, tuple[object, ...]] = {}
    same = later = 0
    for r in sorted((r for r in records if not is_error(r)), key=lambda r: r.epoch):
        if r.task_id not in first:
            first[r.task_id] = _talk(r)
            continue
        later += 1
        same += _talk(r) == first[r.task_id]
    return same, later


def flagged_of(records: Sequence[RunRecord]) -> UserErrors:
    """The rules over a run's judged conversations, each against its task's scenario."""
    return user_errors([r for r in records if not is_error(r)], scenarios_of(records))


def run_row(
    name: str, records: Sequence[RunRecord], flagged: UserErrors, most_k: int = 4
) -> list[object]:
    """One run: how τ² held it, who held both sides, tasks and epochs, pass^k (k = 1..epochs,
    at most ``most_k``), the mean reward, how many of its rewarded conversations ended before
    the agent's first turn (the user left at once, on a task where nothing needed doing), how
    conversations ended, the conversations a rule flagged a user turn of and the share right
    among the others, and the settings that differ from τ²'s runner's. Beside pass^k, how
    many later epochs repeated the first's talk (``repeats``). ``flagged``: ``flagged_of``
    the records, made once for every table that reads it."""
    judged = [r for r in records if not is_error(r)]
    agent, user = _who(records)
    mode = mode_of(records)
    epochs = min((len(v) for v in by_task(judged).values()), default=0)
    # pass^1 is the accuracy with the task as the unit (each task the share of its epochs).
    first = accuracy(judged) if judged else None
    curve = [pass_hat_k(judged, k) for k in range(2, min(epochs, most_k) + 1)]
    same, later = repeats(judged)
    rewards = [
        r.environment.reward
        for r in judged
        if isinstance(r.environment, Tau2Data) and r.environment.reward is not None
    ]
    right = [r for r in judged if r.correct]
    silent = sum(r.turns == 0 for r in right)
    ends = Counter(r.conversation.end for r in records if r.conversation is not None)
    if mode == "solo" or not flagged.conversations:
        erred = clean = "–"
    else:
        erred = f"{flagged.flagged_conversations}/{flagged.conversations}"
        clean = (
            f"{wilson(flagged.clean_correct, flagged.clean).interval()} of {flagged.clean}"
            if flagged.clean else "none"
        )  # fmt: skip
    return [
        name,
        mode,
        agent,
        "none" if mode == "solo" else user,
        f"{len(by_task(judged))} × {epochs}",
        "–" if first is None else first.interval(),
        (" / ".join(f"{v:.1%}" for v in curve if v is not None) or "–")
        + (f" ({same} of {later} later epochs repeat the first)" if later else ""),
        f"{sum(rewards) / len(rewards):.2f}" if rewards else "–",
        "–" if mode == "solo" else (f"{silent} of {len(right)}" if right else "–"),
        ", ".join(f"{e} {ends[e]}" for e in ENDS if ends[e]) or "–",
        erred,
        clean,
        "; ".join(differs(settings(records[0]))) or "none",
        # The code each run was made with, and the server's slots (which requests were decoded
        # together moves a greedy reply): runs that differ in either are not like for like.
        ", ".join(sorted({str(r.spec.code_version or "–") for r in records}))
        + "; "
        + ", ".join(str(n) for n in sorted({r.spec.slots or 1 for r in records})),
        len(records) - len(judged),
    ]


HEAD = ["run", "mode", "agent", "user", "tasks × epochs", "pass^1 [95 % CI]",
        "pass^2 … pass^k", "mean reward", "rewarded before the agent spoke", "ends",
        "user erred (rules)", "right where it did not [95 % CI] of n conversations",
        "differs from τ²'s runner", "code; server slots", "errors"]  # fmt: skip


Rows = Mapping[str, list[object]]  # each run's row (``run_row``), by its file's name
Flagged = Mapping[str, UserErrors]  # each run's flagged turns (``flagged_of``), by name
MODE = HEAD.index("mode")


def flagged_by_run(runs: Runs) -> dict[str, UserErrors]:
    """Each committed run's flagged turns, made once for the runs tables and the rules'."""
    return {name: flagged_of(records) for name, records in runs if records}


def rows_of(runs: Runs, flagged: Flagged | None = None) -> dict[str, list[object]]:
    """Each committed run's row, made once for every table that shows it, in file-name order
    (``flagged``: ``flagged_by_run`` of the runs, where made already)."""
    found = flagged_by_run(runs) if flagged is None else flagged
    return {name: run_row(name, records, found[name]) for name, records in runs if records}


def runs_table(rows: Rows, modes: Sequence[str] = ()) -> str:
    """Committed runs (``rows_of``; of ``modes`` only, when given), one row each, by file name."""
    chosen = [row for row in rows.values() if not modes or row[MODE] in modes]
    if not chosen:
        return "No run of this kind is committed yet.\n"
    return table(HEAD, chosen)


def rules_table(flagged: Flagged, superseded: Flagged) -> str:
    """The user's flagged turns by rule, per committed run (``flagged_by_run``; a superseded
    run's name says so)."""
    rows = []
    for prefix, named in (("", flagged), ("superseded: ", superseded)):
        for name, found in named.items():
            if not found.turns:
                continue
            rows.append([prefix + name, found.turns,
                         *(found.by_rule.get(rule, 0) for rule in RULES),
                         f"{found.flagged_conversations}/{found.conversations}"])  # fmt: skip
    if not rows:
        return "No conversation run is committed yet.\n"
    return table(["run", "user turns", *RULES, "conversations flagged"], rows)


def headline_text(
    folder: Path = HEADLINES, runs: Mapping[str, Sequence[RunRecord]] | None = None
) -> str:
    """Each headline run's sample (``headline-RUN.jsonl``), a paragraph each."""
    paths = sorted(p for p in folder.glob("headline-*.jsonl") if not p.name.endswith(SECOND_READER))
    if not paths:
        return "No sample is labelled yet.\n"
    return "\n".join(sample_text(path, heldout=True, runs=runs) for path in paths)


def labels_text(path: Path = OLD_LABELS) -> str:
    return sample_text(path)


def heldout_text(path: Path = HELDOUT) -> str:
    return sample_text(path, heldout=True)


def _candidates(name: str) -> tuple[str, str]:
    """Where a superseded run's successor stands: the same name, or the same with four epochs
    (the K=1 model runs were redone as the K=4 ones)."""
    return name, f"{name.removesuffix('-k4')}-k4"


def _successor(name: str, now: Rows, mode: object) -> str | None:
    """The run made under τ²'s rules that stands where a superseded one stood, in its mode."""
    for candidate in _candidates(name):
        if candidate in now and now[candidate][MODE] == mode:
            return candidate
    return None


def then_now_table(now: Rows, old: Rows, folder: Path = RESULTS) -> str:
    """Each superseded run beside the run that replaced it: pass^1, how conversations ended and
    the code, then and now (``–`` where none replaced it; ``under way`` while its file is a
    ``.partial``). Made at different code and under different rules, so a pair is not like for
    like: the table says what moved, not what a change of the agent's did."""
    at = [HEAD.index(h) for h in ("pass^1 [95 % CI]", "ends", "code; server slots")]
    rows = []
    for name, then in old.items():
        successor = _successor(name, now, then[MODE])
        if successor is None:
            partial = any((folder / f"{c}.jsonl.partial").exists() for c in _candidates(name))
            after: list[object] = ["under way" if partial else "–", "–", "–", "–"]
        else:
            after = [successor, *(now[successor][i] for i in at)]
        rows.append([name, *(then[i] for i in at), *after])
    if not rows:
        return "No superseded run is committed.\n"
    return table(["superseded run", "pass^1 then", "ends then", "code; slots then", "run now",
                  "pass^1 now", "ends now", "code; slots now"], rows)  # fmt: skip


def anchors_table() -> str:
    rows = [[name, f"{a:.1f}", f"{r:.1f}", f"{t:.1f}"] for name, a, r, t in ANCHORS]
    return table(["published (pass^1, %)", "airline", "retail", "telecom"], rows)


def blocks(folder: Path = RESULTS) -> dict[str, str]:
    """docs/tau2.md's generated blocks, by name: the runs that measure the agent (solo, gt)
    first, then the conversation runs, the superseded ones, the user's flags and samples.
    Each committed run file is read once, and each run's flagged turns and row made once."""
    runs, old = conversation_runs(folder), conversation_runs(SUPERSEDED)
    now_flags, old_flags = flagged_by_run(runs), flagged_by_run(old)
    now_rows, old_rows = rows_of(runs, now_flags), rows_of(old, old_flags)
    return {
        "tau2-agent": runs_table(now_rows, modes=("solo", "gt")),
        "tau2-runs": runs_table(now_rows, modes=("conversation",)),
        "tau2-superseded": runs_table(old_rows),
        "tau2-then-now": then_now_table(now_rows, old_rows, folder),
        "tau2-user-rules": rules_table(now_flags, old_flags),
        "tau2-anchors": anchors_table(),
        "tau2-user-sample": sample_text(LABELS, heldout=True),
        "tau2-user-headline": headline_text(runs=dict(runs)),
        "tau2-user-labels": labels_text(),
        "tau2-user-heldout": heldout_text(),
    }


def write_page(page: Path = PAGE, folder: Path = RESULTS) -> list[str]:
    """Fill docs/tau2.md's blocks from the committed runs; the blocks that changed."""
    return [name for name, text in blocks(folder).items() if fill(page, name, text)]
