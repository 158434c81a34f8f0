"""What ran: the model and its weights, the server and its software, how tool calls were
decoded, the solver and the preset with every setting, the loop's limits, the task set and
its hash, the machine and the code. One :class:`RunSpec` is built per eval and every record of
that eval carries the same one (Inspect's ``EvalSpec``: written once, never rebuilt per
sample)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

CODE_PATHS = ("serve_local", "harness", "evals", "pyproject.toml", "Makefile")


class PresetRecord(BaseModel):
    """The preset a run used: its name and every setting it ended up with (empty where the
    record was written before the settings were kept: BFCL's items up to version 3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    settings: dict[str, Any]


class RunSpec(BaseModel):
    """What one eval ran; the same for each of its records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str | None = None
    # The model and its server: the weights actually served, never the name asked for.
    model: str
    model_sha256: str | None = None
    backend: str | None = None
    tool_grammar: str | None = None  # serve_local's --tool-grammar, when the server says
    draft: str | None = None  # serve_local's --draft, when the server says
    # Requests the server decoded together (its slots), when more than one: batched
    # arithmetic can move a near tie, so a run says how it was served.
    slots: int | None = None
    base_url: str | None = None
    servers: list[dict[str, Any]] | None = None
    api: str | None = None  # the wire shape: openai | anthropic
    # The loop: its limits and sampling by the names of ``harness.config.LoopConfig``, with
    # the eval's own settings that change a task run (approvals, solver, the user of a
    # conversation); its preset with every setting.
    loop: dict[str, Any] | None = None
    # A task set that holds a conversation: its simulated user's settings and its caps, by the
    # names of ``evals.run.settings.EvalSettings`` (None: no task of the eval had a user).
    conversation: dict[str, Any] | None = None
    # The preset with every setting the eval's environments read (those another environment
    # owns left out: ``evals.record.environments.preset_used``).
    preset: PresetRecord | None = None
    # How a task was solved: the agent loop, or a workflow, and what the workflow fixes.
    # Every record before solvers existed ran the agent loop.
    solver: str = "agent"
    solver_settings: dict[str, Any] = {}
    temperature: float | None = None
    # The task set: its name and a hash of every task's content (None: written before).
    task_set: str | None = None
    task_set_hash: str | None = None
    # How cost was priced where it is not the loop's list price (a local model's): a hosted
    # model at its provider's list price (``input_per_million``, ``output_per_million``,
    # ``source``), or ``{"source": "unknown"}`` (the records' cost is then None, never 0).
    prices: dict[str, Any] | None = None
    # Where, and from what code.
    machine: dict[str, Any] | None = None
    code_version: str | None = None


# The loop's keys as records kept them before the loop's settings were one group.
OLD_LOOP_KEYS = {"budget_usd": "max_budget_usd", "task_timeout_s": "timeout_s"}
# RunSpec's fields as records of version 2 wrote them, at the record's top level (``preset``
# was ``policy``; ``conversation`` did not exist).
SPEC_FIELDS_BEFORE = tuple(
    "policy" if k == "preset" else k for k in RunSpec.model_fields if k != "conversation"
)
# The keys records of version 4 kept under ``loop`` that only a conversation reads.
CONVERSATION_KEYS_V4 = ("user_model", "user_temperature", "max_user_turns", "max_steps",
                        "max_errors", "agent")  # fmt: skip


def renamed_spec(record: dict[str, Any]) -> dict[str, Any]:
    """A record (run or BFCL item) whose spec was written before the preset and the loop's
    fields had today's names: ``policy`` becomes ``preset``, the loop's ``budget_usd`` and
    ``task_timeout_s`` become ``max_budget_usd`` and ``timeout_s``."""
    spec = dict(record["spec"])
    if "policy" in spec:
        spec["preset"] = spec.pop("policy")
    if spec.get("loop") is not None:
        spec["loop"] = {OLD_LOOP_KEYS.get(k, k): v for k, v in spec["loop"].items()}
    return {**record, "spec": spec}


def code_version() -> str | None:
    """The git commit the code ran from, ``+dirty`` when the code differed from it."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", *CODE_PATHS],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+dirty" if commit and dirty else commit or None


def machine() -> dict[str, Any]:
    """The machine's cores, CPU and platform."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "platform": platform.platform()}
