"""Named loop policies: presets read from ``presets.json``, and the flags that pick or adjust one.

A policy is recorded as its name and every setting it ends up with, so a result says exactly
which loop produced it. A flag given beside ``--policy`` overrides that setting, and the name
then carries a ``+`` (``guarded+tool_choice``) so it never passes for the plain preset.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harness.config import POLICY_FIELDS, LoopConfig
from harness.errors import HarnessError

PRESETS_FILE = Path(__file__).with_name("presets.json")
PLAIN = "no-helpers"


class UnknownPolicy(HarnessError):
    """A policy name that is not a preset; the message lists the presets."""


@dataclass(frozen=True)
class Policy:
    name: str
    settings: dict[str, Any]

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "settings": dict(self.settings)}


def presets() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    return data


def plain_settings() -> dict[str, Any]:
    defaults = LoopConfig()
    return {name: getattr(defaults, name) for name in POLICY_FIELDS}


def preset(name: str) -> Policy:
    known = presets()
    if name not in known:
        raise UnknownPolicy(f"no policy {name!r}; the presets are: {', '.join(known)}")
    unknown = set(known[name]["settings"]) - set(POLICY_FIELDS)
    if unknown:
        raise UnknownPolicy(f"policy {name!r} sets {sorted(unknown)}, which are not policies")
    return Policy(name, {**plain_settings(), **known[name]["settings"]})


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError("write on or off")
    return text == "on"


def add_policy_flags(p: argparse.ArgumentParser) -> None:
    """Every loop policy as a flag; unset flags leave the preset's value. A bare on|off flag
    (``--dedupe``) means on."""
    g = p.add_argument_group("loop policy (each flag overrides the --policy preset)")
    g.add_argument("--policy", default=PLAIN, help=f"a preset of {PRESETS_FILE.name}")
    g.add_argument("--tools", choices=["all", "read_only", "task"], help="tools offered")
    g.add_argument(
        "--tool-choice",
        metavar="auto|required|always|TOOL",
        help="required: the first reply must call a tool; always: every reply must; a tool's "
        "name: the first reply must call that tool",
    )
    g.add_argument("--parallel-tool-calls", type=_on_off, nargs="?", const=True, metavar="on|off")
    g.add_argument(
        "--submit",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="offer submit(answer)",
    )
    g.add_argument("--nudges", type=int, help="times an empty reply is met with 'go on'")
    g.add_argument(
        "--repeat-guard",
        choices=["off", "note", "answer", "submit"],
        help="a repeated read-only call gets its earlier result and a note; answer: the next "
        "turn is asked without tools; submit: the next turn must call submit",
    )
    g.add_argument(
        "--dedupe",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="reuse read-only results",
    )
    g.add_argument("--max-tokens-per-turn", type=int)
    g.add_argument("--repetition-penalty", type=float)
    g.add_argument("--frequency-penalty", type=float)
    g.add_argument("--presence-penalty", type=float)
    g.add_argument(
        "--example",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="worked example in prompt",
    )
    g.add_argument(
        "--conclude-on-limit",
        type=_on_off,
        metavar="on|off",
        help="when a limit hits, ask once more for an answer without tools",
    )
    g.add_argument(
        "--listing",
        choices=["plain", "by_size"],
        help="list_files by name, or by size, biggest first",
    )
    g.add_argument(
        "--required-turns",
        type=int,
        metavar="N",
        help="the first N replies must call a tool (after a first-turn --tool-choice)",
    )
    g.add_argument(
        "--act-after-error",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="the reply after a failed call must call a tool",
    )
    g.add_argument(
        "--name-files-on-miss",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="a read of a missing file is answered with the names of the files that exist",
    )
    g.add_argument(
        "--grounding",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="the system prompt asks to open every file the answer depends on and to answer "
        "only from tool results",
    )
    g.add_argument(
        "--read-before-answer",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="an answer given before any file was read is met, once, with a request to read "
        "the file it depends on; the next reply must call a tool",
    )
    g.add_argument(
        "--read-listed",
        type=_on_off,
        nargs="?",
        const=True,
        metavar="on|off",
        help="an answer given while files list_files showed are unread is met with a request "
        "to read those it depends on (naming none); the next reply must call a tool",
    )


def policy_from_args(args: argparse.Namespace) -> Policy:
    chosen = preset(args.policy)
    overrides = {
        name: getattr(args, name)
        for name in POLICY_FIELDS
        if getattr(args, name, None) is not None and getattr(args, name) != chosen.settings[name]
    }
    if not overrides:
        return chosen
    return Policy(f"{chosen.name}+{','.join(overrides)}", {**chosen.settings, **overrides})


def apply(config: LoopConfig, policy: Policy) -> LoopConfig:
    """``config`` with the policy's settings."""
    known = {f.name for f in fields(LoopConfig)}
    return LoopConfig(**{**{f: getattr(config, f) for f in known}, **policy.settings})
