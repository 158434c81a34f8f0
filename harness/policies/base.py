"""What a hook is: its settings, and the methods the loop calls at each step of a turn.

A hook is one object with a name, the settings it reads (each with its default, its check and
its command-line flag) and any of the methods below; a method it does not define leaves the run
as the plain loop would have it. The loop calls the methods of every registered hook
(``harness.policies.registry``) in registry order:

* ``prompt``: edits the system prompt the loop gives a run that has none;
* ``offer``: edits the tools the run is offered (filters them, adds one, wraps one);
* ``ask``: after each reply is recorded (before its calls run), a request to say to the
  model, or None; the loop appends it and records it as the hook's
  :class:`~harness.state.Ask`, the run's typed record of what each hook said, so no text in
  the transcript can be taken for one;
* ``answer``: the run's final answer read from the newest reply (``submit``);
* ``plan``: what the next request asks (tools offered, ``tool_choice``, sampling fields);
* ``answer_call``: an answer to a call without running its tool (dedupe, the repeat guard);
* ``conclusion``: the request for a last answer when a limit is reached, if the hook asks one.

Hooks keep their state in the run's typed fields (``asks``, ``tool_log``), never in what a
message says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, cast

from harness.errors import HarnessError
from harness.setup import Setup
from harness.state import Call, RunState
from harness.toolrun import ToolOutcome
from harness.tools import Tool

T = TypeVar("T")
Kind = Literal["bool", "int", "float", "choice", "text"]
Choice = str | dict[str, Any] | None


class Config(Protocol):
    """What a hook reads of a run's settings (``harness.config.LoopConfig`` is one): the
    settings by name, the sampling asked of the server, and whether dedupe reuses every tool's
    results. Hooks see this much and no more, so the settings' registry stays below the
    config that checks against it."""

    @property
    def settings(self) -> Mapping[str, Any]: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def dedupe_all(self) -> bool: ...


class UnknownSetting(HarnessError):
    """A hook name, setting or value the registry does not know; the message lists what it
    does."""


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One value a hook reads from the run's settings, with its default and its flag."""

    name: str
    default: T
    help: str
    kind: Kind
    choices: tuple[str, ...] = ()
    optional: bool = False  # None is a value: the setting is not sent
    metavar: str | None = None
    # What it does, as the settings' table says it (generated from the registry); the
    # flag's own help is the short form.
    doc: str = ""

    def of(self, config: Config) -> T:
        return self.among(config.settings)

    def among(self, settings: Mapping[str, Any]) -> T:
        """Its value among a run's settings (``LoopConfig.settings``), the default if absent."""
        return cast(T, settings.get(self.name, self.default))

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: object) -> object:
        """``value`` if this setting can hold it; an :class:`UnknownSetting` saying why if not."""
        if value is None and self.optional:
            return None
        ok = {
            "bool": isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
            "choice": value in self.choices,
            "text": isinstance(value, str) and bool(value),
        }[self.kind]
        if not ok:
            wanted = {
                "bool": "true or false",
                "int": "a whole number",
                "float": "a number",
                "choice": "one of " + ", ".join(self.choices),
                "text": "a non-empty text",
            }[self.kind]
            none = " or null" if self.optional else ""
            raise UnknownSetting(f"setting {self.name!r} is {value!r}; it takes {wanted}{none}")
        return value


@dataclass
class Prompt:
    """The system prompt in parts: what the run is, how it ends, rules, then examples; and
    the run's setup (None where a prompt is built without one), from which a hook may add
    what it needs (the overview of what the run works on, say)."""

    intro: str
    finish: str
    rules: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    setup: Setup | None = None

    def text(self) -> str:
        return self.intro + self.finish + "".join(self.rules) + "".join(self.examples)


# What a forced choice outranks: a named tool beats "any tool", which beats no demand.
def _strength(choice: Choice) -> int:
    return 0 if choice is None else 1 if choice == "required" else 2


@dataclass
class TurnPlan:
    """What the next request asks beyond its messages; hooks edit it, the loop sends it."""

    tools: list[dict[str, Any]]
    tool_choice: Choice = None
    options: dict[str, Any] = field(default_factory=dict)  # TurnOptions fields; None: unsent

    def require(self, choice: str | dict[str, Any]) -> None:
        """Demand a call ("required") or one named tool; the strongest demand stands, and of
        two as strong the first hook's."""
        if _strength(choice) > _strength(self.tool_choice):
            self.tool_choice = choice


def named(tool: str) -> dict[str, Any]:
    """The ``tool_choice`` that forces one tool."""
    return {"type": "function", "function": {"name": tool}}


class Hook:
    """The protocol every hook follows; each method's default changes nothing."""

    name: ClassVar[str]
    settings: ClassVar[tuple[Setting[Any], ...]] = ()
    description: ClassVar[str] = ""

    def prompt(self, config: Config, prompt: Prompt) -> None:
        return None

    def offer(self, config: Config, tools: list[Tool], declared: list[str] | None) -> list[Tool]:
        return tools

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        return None

    def answer(self, state: RunState, config: Config) -> str | None:
        return None

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        return None

    def answer_call(
        self, state: RunState, config: Config, tools: Mapping[str, Tool], call: Call
    ) -> tuple[ToolOutcome, str] | None:
        return None

    def conclusion(self, config: Config, limit: str) -> str | None:
        return None


@dataclass(frozen=True)
class Said:
    """A request a hook makes before a turn: its text, and what the hook keeps with it."""

    text: str
    data: dict[str, Any] | None = None
