"""Presets, named choices of the loop's settings read from ``presets.json``, and the flags that
pick or adjust one.

A preset is recorded as its name and every setting it ends up with, so a result says exactly
which loop produced it. A flag given beside ``--preset`` overrides that setting, and the name
then carries a ``+`` (``guarded+tool_choice``) so it never passes for the plain preset. The
flags, their checks and the settings a record holds all come from the registry
(``harness.policies.registry``).
"""

from __future__ import annotations

import argparse
import json
import warnings
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from harness.config import LoopConfig
from harness.plugins import PluginWarning, loaded
from harness.policies.base import Setting, UnknownSetting
from harness.policies.registry import SETTINGS, defaults, settings_of

__all__ = [
    "PLAIN",
    "Preset",
    "UnknownSetting",
    "add_preset_flags",
    "apply",
    "plain_settings",
    "preset",
    "preset_from_args",
    "presets",
]

PRESETS_FILE = Path(__file__).with_name("presets.json")
# Presets other packages declare: each entry point names a dict with the preset's "name", its
# "description", its "settings" and, if any, its "limits" (as presets.json writes one).
GROUP = "loopbench.presets"
# Where a parser keeps the names of the settings it has flags for.
FLAGGED = "_setting_flags"
PLAIN = "no-helpers"


@dataclass(frozen=True)
class Preset:
    """A named choice of settings, as a run records it, and the loop limits it names where no
    flag gives them (``analyst``: 8 turns, 90 s a task; one of :data:`LIMITS`)."""

    name: str
    settings: dict[str, Any]
    limits: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "settings": dict(self.settings)}

    def overriding(self, overrides: dict[str, Any]) -> Preset:
        """This preset with ``overrides`` (those that change a setting); the name carries a
        ``+`` and the settings changed (``guarded+tool_choice``) so it never passes for this
        one."""
        changed = {k: v for k, v in overrides.items() if v != self.settings[k]}
        if not changed:
            return self
        name = f"{self.name}+{','.join(changed)}"
        return Preset(name, {**self.settings, **changed}, self.limits)


@cache
def _own() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    return data


# What a preset may set beyond the hooks' settings: the loop's limits, when no flag gives them.
LIMITS = ("max_turns", "timeout_s")


@cache
def _plugins() -> dict[str, dict[str, Any]]:
    """The presets of other packages by name, each refused (with a warning naming it) if it is
    no preset, names a setting or limit nobody registered, or takes a name already taken."""
    taken = set(_own())

    def accepted(found: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(found, dict) or not isinstance(found.get("settings"), dict):
            raise TypeError("a preset is a dict with a name, a description and its settings")
        name = found.get("name")
        if not isinstance(name, str) or not name or "+" in name:
            raise ValueError(f"a preset's name is a word without '+', not {name!r}")
        if name in taken:
            raise ValueError(f"a preset named {name!r} is already registered")
        settings_of(found["settings"])  # raises UnknownSetting, naming the setting
        unknown = sorted(set(found.get("limits") or {}) - set(LIMITS))
        if unknown:
            raise UnknownSetting(f"no limit {', '.join(unknown)}; limits: {LIMITS}")
        taken.add(name)
        kept = {k: found[k] for k in ("description", "settings", "limits") if k in found}
        return name, kept

    return dict(loaded(GROUP, accepted))


def presets() -> dict[str, dict[str, Any]]:
    """Every preset by name: presets.json's, then those of other packages."""
    return {**_own(), **_plugins()}


def plain_settings() -> dict[str, Any]:
    return defaults()


def preset(name: str) -> Preset:
    known = presets()
    if name not in known:
        raise UnknownSetting(f"no preset {name!r}; the presets are: {', '.join(known)}")
    try:
        settings = settings_of(known[name]["settings"])
    except UnknownSetting as exc:
        raise UnknownSetting(f"preset {name!r} in {PRESETS_FILE.name}: {exc}") from exc
    limits = dict(known[name].get("limits") or {})
    unknown = sorted(set(limits) - set(LIMITS))
    if unknown:
        raise UnknownSetting(f"preset {name!r}: no limit {', '.join(unknown)}; limits: {LIMITS}")
    return Preset(name, dict(settings), limits)


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError("write on or off")
    return text == "on"


def _flag(group: Any, setting: Setting[Any]) -> None:
    """Add ``setting``'s flag to an argument group (``ArgumentParser.add_argument_group``)."""
    if setting.kind == "bool":
        group.add_argument(
            setting.flag, type=_on_off, nargs="?", const=True, metavar="on|off", help=setting.help
        )
    elif setting.kind == "choice":
        group.add_argument(setting.flag, choices=setting.choices, help=setting.help)
    else:
        kind = {"int": int, "float": float, "text": str}[setting.kind]
        group.add_argument(setting.flag, type=kind, metavar=setting.metavar, help=setting.help)


def add_preset_flags(
    p: argparse.ArgumentParser, default: str | None = PLAIN, unset: str = ""
) -> None:
    """``--preset`` (and its older name) and every setting as a flag; unset
    flags leave the preset's value. A bare on|off flag (``--dedupe``) means on. ``default``
    None: the command chooses when none is named (``unset`` says how, in the help)."""
    g = p.add_argument_group("the loop's settings (each flag overrides the --preset's)")
    said = f"default {default}" if default is not None else unset
    g.add_argument(
        "--preset",
        "--policy",
        dest="preset",
        default=default,
        help=f"a preset of {PRESETS_FILE.name} or a plugin's ({said}; --policy: its older name)",
    )
    flagged = []
    for setting in SETTINGS.values():
        try:
            _flag(g, setting)
            flagged.append(setting.name)
        except argparse.ArgumentError as exc:  # a plugin's setting named as one of the loop's
            warnings.warn(
                f"setting {setting.name!r} has no flag: {exc}", PluginWarning, stacklevel=2
            )
    # Which settings the flags are: a flag of the command's own is never read as one.
    p.set_defaults(**{FLAGGED: tuple(flagged)})


def preset_from_args(args: argparse.Namespace) -> Preset:
    """The ``--preset`` named, with the settings its flags change."""
    flagged = getattr(args, FLAGGED, tuple(SETTINGS))
    given = {name: getattr(args, name) for name in flagged if getattr(args, name, None) is not None}
    return preset(args.preset).overriding(given)


def apply(config: LoopConfig, chosen: Preset) -> LoopConfig:
    """``config`` with the preset's settings."""
    return replace(config, settings=chosen.settings)
