"""Options a backend declares for itself (simonw/llm's ``Options``): each backend module lists
its own in ``OPTIONS``, and ``python -m serve_local`` builds its parser from them, one group per
backend. An option given to a backend that does not declare it is an error naming the
backends that do, never silently ignored."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serve_local.errors import StartupError
from serve_local.toolgrammar import GRAMMAR_MODES


@dataclass(frozen=True)
class Option:
    """One command-line option: its flag and what argparse needs to read it. ``env``: an
    environment variable that sets its default (as ``make serve-local`` passes them)."""

    flag: str
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    env: str | None = None
    switch: bool = False  # a flag without a value: True when given
    repeat: bool = False  # given as often as wanted: the values in a list
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def default_value(self) -> Any:
        from_env = os.environ.get(self.env) if self.env else None
        if from_env:
            return (self.type or str)(from_env)
        return list(self.default) if self.repeat else self.default

    def add_to(self, group: Any, declared_by: Sequence[str]) -> None:
        """The option in ``group``, with no default: what was not given stays unset, so a
        backend that does not declare it can tell (:func:`apply_defaults` fills the rest)."""
        shown = self.default_value()
        said = self.help + ("" if shown in (None, False) else f" (default: {shown})")
        if len(declared_by) > 1:
            said += f" [{', '.join(declared_by)}]"
        kwargs: dict[str, Any] = {"help": said, "default": argparse.SUPPRESS}
        if self.switch:
            kwargs["action"] = "store_true"
        elif self.repeat:
            kwargs.update(action="append", metavar=self.metavar)
        else:
            kwargs.update(type=self.type, choices=self.choices, metavar=self.metavar)
        group.add_argument(self.flag, **{k: v for k, v in kwargs.items() if v is not None})


# What every model backend reads: llama and transformers declare these among their options.
MODEL_OPTIONS: tuple[Option, ...] = (
    Option(
        "--model",
        "GGUF file, model folder, hf:<repo>/<file>, or a packaged name (default: $MODEL, else "
        "a Qwen2.5-0.5B-Instruct GGUF in the Hugging Face cache, else the packaged "
        "Qwen2.5-Coder-1.5B-Instruct; python -m serve_local.models list)",
        env="MODEL",
    ),
    Option("--ctx", "context size in tokens", 4096, type=int),
    Option("--threads", "CPU threads (default: all)", type=int),
    Option(
        "--tool-grammar",
        "'lazy' constrains a tool call to an offered tool and its argument schema from the "
        "moment the reply starts one (from the first token under tool_choice 'required'); "
        "'off' parses free text only",
        "lazy",
        choices=GRAMMAR_MODES,
        env="TOOL_GRAMMAR",
    ),
    Option(
        "--written-replies",
        "render a past reply of this server as the model wrote it, not in the chat template's "
        "form, so the prefix cache keeps it (off by default: the model then reads its own call "
        "shapes back and may copy them as text)",
        False,
        switch=True,
    ),
)


def _declared_by(option: Option, declared: Mapping[str, Sequence[Option]]) -> list[str]:
    """The backends that declare ``option`` (by its flag), in registry order."""
    return [name for name, opts in declared.items() if any(o.flag == option.flag for o in opts)]


def add_options(parser: argparse.ArgumentParser, declared: Mapping[str, Sequence[Option]]) -> None:
    """Each backend's options (``declared``: by backend name) in a group of its own; an option
    several backends declare is added once, in the first one's group, naming them all."""
    added: set[str] = set()
    for name, options in declared.items():
        group = parser.add_argument_group(f"options of the {name} backend")
        for option in options:
            if option.flag in added:
                continue
            added.add(option.flag)
            option.add_to(group, _declared_by(option, declared))


def apply_defaults(
    args: argparse.Namespace, backend: str, declared: Mapping[str, Sequence[Option]]
) -> argparse.Namespace:
    """``args`` with the defaults of ``backend``'s options; an option it does not declare
    that was given is a :class:`StartupError` naming the backends that take it."""
    own = {o.dest: o for o in declared[backend]}
    for option in {o.dest: o for opts in declared.values() for o in opts}.values():
        if option.dest not in own and hasattr(args, option.dest):
            takers = _declared_by(option, declared)
            raise StartupError(
                f"{option.flag} is an option of the {' and '.join(takers)} backend"
                f"{'s' if len(takers) > 1 else ''}, not of {backend}; the {backend} backend "
                f"takes: {', '.join(o.flag for o in declared[backend]) or 'no options'}"
            )
    for dest, option in own.items():
        if not hasattr(args, dest):
            setattr(args, dest, option.default_value())
    return args
