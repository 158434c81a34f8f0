"""The loop's config: its limits, prices and sampling, and the settings of its hooks.

A field with a :func:`flag` is one an eval sets from its command line (``evals run``,
``evals tau2``), records in each record's ``spec.loop`` and keeps for a resume, under the
field's own name: a new loop limit is its field here and its flag beside it, nothing else.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from typing import Any

from harness.policies.registry import settings_of
from harness.prices import Prices
from harness.tool_errors import TOOL_ERROR_POLICIES, ToolErrorPolicy


@dataclass(frozen=True)
class Flag:
    """The command-line flag of a loop field: its option, what it parses to (a type, or the
    choices it takes), its help."""

    option: str
    parse: type | tuple[str, ...]
    help: str
    metavar: str | None = None
    aliases: tuple[str, ...] = ()


def flag(
    option: str,
    parse: type | tuple[str, ...],
    help: str,
    metavar: str | None = None,
    aliases: tuple[str, ...] = (),
) -> dict[str, Flag]:
    """The metadata of a field of :class:`LoopConfig` that an eval's command line sets."""
    return {"flag": Flag(option, parse, help, metavar, aliases)}


@dataclass
class LoopConfig:
    """Limits are checked before each model call, so a budget overshoots by at most one turn."""

    max_turns: int | None = field(
        default=20,
        metadata=flag(
            "--max-turns", int, "turns per task run (default: the preset's, else 10)", "N"
        ),
    )
    max_budget_usd: float | None = field(
        default=None, metadata=flag("--budget", float, "USD per task run", "USD")
    )
    max_total_tokens: int | None = field(
        default=None, metadata=flag("--max-tokens", int, "tokens per task run, in and out", "N")
    )
    # The run's time limit, across resumes: its own work (RunState.work_ms: the model's and
    # the tools' time), checked before each model call; the wall clock stops the run at the
    # limit too, and a limit reached by wall time only is the machinery's (harness.loop).
    timeout_s: float | None = field(
        default=None,
        metadata=flag(
            "--task-timeout",
            float,
            "seconds per task run (default: the preset's)",
            "S",
            aliases=("--timeout",),
        ),
    )
    tool_errors: ToolErrorPolicy = field(
        default="descriptive",
        metadata=flag("--tool-errors", TOOL_ERROR_POLICIES, "how a failed tool call is worded"),
    )
    stop_on_permanent_error: bool = False
    tool_timeout_s: float = field(
        default=30.0,
        metadata=flag("--tool-timeout", float, "seconds a tool call may take (default 30)", "S"),
    )
    # With the dedupe setting on, reuse the results of every tool, writes included (unsafe,
    # for measurement).
    dedupe_all: bool = False
    cancel_grace_s: float = 1.0  # how long a cancelled tool gets to stop by itself
    # The most of one tool result the model reads (UTF-8 bytes); the rest is cut, the cut said
    # in the result and recorded in the trace. A tool can return megabytes; a context cannot.
    tool_result_cap_bytes: int = 256 * 1024
    cancel_reaches_tools: bool = True  # False: only the provider call sees the token
    # A reply cut at the length limit with no call: True, the model is asked to finish it;
    # False, it is the answer, as any reply without a call (BFCL's multi-turn inference ends
    # the user turn on it).
    finish_cut_replies: bool = True
    prices: Prices = field(default_factory=Prices)
    # Sampling asked of the server on every request of the run; None: greedy, no seed sent.
    # An eval's seed is its first epoch's: epoch e asks for seed + e - 1.
    temperature: float | None = field(
        default=None,
        metadata=flag(
            "--temperature",
            float,
            "sample at this temperature on every request (default: greedy, so epochs repeat)",
            "T",
        ),
    )
    seed: int | None = field(
        default=None,
        metadata=flag(
            "--seed",
            int,
            "sampling seed: epoch e of each task asks for S + e - 1 (recorded in each record)",
            "S",
        ),
    )
    # The settings of the loop's hooks (harness.policies.registry), by name: a preset's, and
    # any flag's; any left out is at its default, so the default is the plain loop. Checked
    # against the registry.
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.settings = settings_of(self.settings)

    @classmethod
    def of(cls, **values: Any) -> LoopConfig:
        """A config from the loop's own fields and the hooks' settings side by side
        (``LoopConfig.of(max_turns=3, conclude_on_limit=True)``); a name that is neither is an
        error that lists the settings."""
        own = {f.name for f in fields(cls)}
        mine = {k: v for k, v in values.items() if k in own}
        flat = {k: v for k, v in values.items() if k not in own}
        return cls(**{**mine, "settings": {**flat, **(mine.get("settings") or {})}})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopConfig:
        """A config saved with ``asdict``; one saved before the hooks were objects has their
        settings among its own fields, and one saved before they were named so, under their
        older name."""
        values = dict(data)
        if "policy" in values:
            values["settings"] = values.pop("policy")
        values["prices"] = Prices(**values["prices"]) if "prices" in values else Prices()
        return cls.of(**values)

    def with_settings(self, **settings: Any) -> LoopConfig:
        """This config with some of the hooks' settings changed."""
        return replace(self, settings={**self.settings, **settings})


FLAGGED = tuple(f.name for f in fields(LoopConfig) if "flag" in f.metadata)


def flagged(config: LoopConfig) -> dict[str, Any]:
    """The fields of ``config`` an eval sets and records, by their names."""
    return {name: getattr(config, name) for name in FLAGGED}


def add_loop_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for each field of :data:`FLAGGED`, kept under the field's name; a flag not given
    is None (the preset's limit, else the eval's default: :func:`loop_from_args`)."""
    for f in fields(LoopConfig):
        if "flag" not in f.metadata:
            continue
        spec: Flag = f.metadata["flag"]
        names = (spec.option, *spec.aliases)
        if isinstance(spec.parse, tuple):
            parser.add_argument(*names, dest=f.name, choices=spec.parse, help=spec.help)
        else:
            parser.add_argument(
                *names, dest=f.name, type=spec.parse, metavar=spec.metavar, help=spec.help
            )


def loop_from_args(
    args: argparse.Namespace, base: LoopConfig, limits: dict[str, Any] | None = None
) -> LoopConfig:
    """``base`` with a preset's ``limits`` and then every flag given."""
    given = {k: getattr(args, k) for k in FLAGGED if getattr(args, k, None) is not None}
    return replace(base, **{**(limits or {}), **given})
