"""Check kinds: each one's model (what a task file writes) and its pass logic together.

A check passes or fails on :class:`Evidence`, what a finished run shows: the answer it stated,
its status, the files it read, the tool results it received and the calls it made
(``evals.scoring.evidence`` reads these from a run's state). The ``Check`` union below holds
this project's kinds: a new one is one model with ``kind`` and ``passes``, and one line there.
An environment may bring kinds of its own (its ``check_kinds``, registered with it by
``register_check``) and name its own judge (``judges``, for ``judged`` checks); a task file
that names either loads once the environments are registered (``evals.installed``).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Protocol, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)

from evals import installed
from evals.tasks.answer_types import (
    Answer,
    Crediting,
)
from harness.workspace import normal_name


class Evidence(Crediting, Protocol):
    """What a finished run shows a check (an answer check reads ``credits``, of
    :class:`~evals.tasks.answer_types.Crediting`)."""

    @property
    def answer(self) -> str:
        """The answer the run stated (calls and tool results written as text left out)."""
        ...

    @property
    def status(self) -> str: ...

    def files_read(self) -> set[str]:
        """Files whose content a successful read_file returned, by workspace name."""
        ...

    def observed(self, tool: str, arguments: dict[str, Any], result_contains: list[str]) -> bool:
        """A result the run received (a call that succeeded) of ``tool`` with ``arguments``
        (paths compared as paths) holding every string of ``result_contains``."""
        ...

    def called(self, name: str, arguments: dict[str, Any] | None) -> bool:
        """A call of ``name`` (with ``arguments``, when given) was answered, whatever its
        outcome."""
        ...

    def results(self, tool: str | None) -> list[str]:
        """The text of every result of ``tool`` (None: of any tool) the run received (calls
        that succeeded)."""
        ...

    def afterwards(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """The result of ``tool`` called with ``arguments`` once the run was over, on what it
        left (None: no such call was made)."""
        ...

    def judged(self, by: str) -> float | None:
        """The reward the environment's own judge ``by`` gave the run (None: it gave none)."""
        ...

    def reads_of(self, tools: list[str], name: str) -> set[bool]:
        """What reads of the file ``name`` in the task's folder by ``tools`` showed: True for a
        read that returned the file, False for one the tool itself answered that there is no
        such file (a refused, declined or failed-for-another-reason call shows neither)."""
        ...


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Contains(_Check):
    kind: Literal["contains"]
    value: str

    def passes(self, run: Evidence) -> bool:
        return self.value.lower() in run.answer.lower()


class ContainsAny(_Check):
    kind: Literal["contains_any"]
    values: list[str] = Field(min_length=1)

    def passes(self, run: Evidence) -> bool:
        return any(v.lower() in run.answer.lower() for v in self.values)


class NotContains(_Check):
    kind: Literal["not_contains"]
    values: list[str] = Field(min_length=1)

    def passes(self, run: Evidence) -> bool:
        return not any(v.lower() in run.answer.lower() for v in self.values)


class Regex(_Check):
    kind: Literal["regex"]
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from exc
        return value

    def passes(self, run: Evidence) -> bool:
        return re.search(self.pattern, run.answer, re.IGNORECASE) is not None


class FilesRead(_Check):
    """``read_file`` returned content for these files (and, with ``exact``, no others)."""

    kind: Literal["files_read"]
    files: list[str] = Field(min_length=1)
    exact: bool = False

    def passes(self, run: Evidence) -> bool:
        read, wanted = run.files_read(), {normal_name(f) for f in self.files}
        return read == wanted if self.exact else wanted <= read


class ToolCalled(_Check):
    """A call of this tool was answered, whatever its outcome: a record of behaviour, never
    evidence (use ``observed`` for what the run learned)."""

    kind: Literal["tool_called"]
    name: str
    arguments: dict[str, Any] | None = None

    def passes(self, run: Evidence) -> bool:
        return run.called(self.name, self.arguments)


class Observed(_Check):
    """The run received this tool's result: a call of ``tool`` that succeeded (not refused,
    failed, declined, nor a copy of a failure) whose arguments include ``arguments`` (paths
    compared as paths: ``./notes.txt`` is ``notes.txt``) and whose result holds every string
    of ``result_contains``. This is what grounds an answer: the fact it states came from a tool
    result the model read."""

    kind: Literal["observed"]
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    result_contains: list[str] = Field(default_factory=list)

    def passes(self, run: Evidence) -> bool:
        return run.observed(self.tool, self.arguments or {}, self.result_contains)


class Received(_Check):
    """Some result the run received (a call that succeeded) holds every string of
    ``result_contains``, whichever tool gave it (``tool``: only that one). The evidence for a
    task whose tools are a server's (``mcpServers``), where the tools' names and arguments are
    the server's: what grounds the answer is the text the model read."""

    kind: Literal["received"]
    result_contains: list[str] = Field(min_length=1)
    tool: str | None = None

    def passes(self, run: Evidence) -> bool:
        wanted = [s.lower() for s in self.result_contains]
        return any(all(s in r.lower() for s in wanted) for r in run.results(self.tool))


_RESULT_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


class ObservedValue(_Check):
    """The run received the answer's value in a result of ``tool`` (None: of any tool): a
    number within ``tolerance`` of ``number`` (whatever the query's rounding), and every one of
    ``texts`` (names, as whole words) in some result. What grounds an answer computed by a
    query: the model's query need not be the gold one, only its result must hold the value."""

    kind: Literal["observed_value"]
    tool: str | None = Field(default=None, min_length=1)
    number: float | None = None
    tolerance: float = Field(default=0.0, ge=0.0)
    texts: list[str] = Field(default_factory=list)

    def passes(self, run: Evidence) -> bool:
        results = run.results(self.tool)
        if not results:
            return False
        if self.number is not None:
            numbers = (float(m) for r in results for m in _RESULT_NUMBER.findall(r))
            if not any(abs(n - self.number) <= self.tolerance + 1e-9 for n in numbers):
                return False
        return all(
            any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", r, re.IGNORECASE) for r in results)
            for t in self.texts
        )


class StatusIs(_Check):
    kind: Literal["status"]
    value: Literal["completed", "failed", "max_turns_exceeded", "budget_exceeded", "interrupted"]

    def passes(self, run: Evidence) -> bool:
        return run.status == self.value


class Presence(_Check):
    """Whether the file ``name`` is in the task's folder, as a tool result shows it, whatever
    tool gave it: a listing that names it (a file that is there), or a complete listing, every
    file of ``listing`` (a file that is not); or a read of it by its path, whose contents say
    it is there and whose "no such file" error, from the tool itself, says it is not.
    ``lists``: the tools whose results are listings (None: any result the run received);
    ``reads``: the tools that read one file by its ``path``."""

    kind: Literal["presence"]
    name: str = Field(min_length=1)
    exists: bool
    listing: list[str] = Field(min_length=1)
    lists: list[str] | None = None
    reads: list[str] = Field(default_factory=lambda: ["read_file"])

    def passes(self, run: Evidence) -> bool:
        shown = [self.name] if self.exists else self.listing
        lists: list[str | None] = list(self.lists) if self.lists is not None else [None]
        for tool in lists:
            if any(all(s.lower() in r.lower() for s in shown) for r in run.results(tool)):
                return True
        return self.exists in run.reads_of(self.reads, self.name)


def after_key(tool: str, arguments: dict[str, Any]) -> str:
    """How a call made after the run is named among its results."""
    return json.dumps([tool, arguments], sort_keys=True, ensure_ascii=False)


class After(_Check):
    """The state the run left: ``tool`` (one of the run's read-only tools), called with
    ``arguments`` once the run is over, returns a result holding every ``result_contains``
    (case-insensitive). What a conversation must have changed: the order's status, the file
    written, the row updated."""

    kind: Literal["after"]
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = {}
    result_contains: list[str] = Field(min_length=1)

    def passes(self, run: Evidence) -> bool:
        result = run.afterwards(self.tool, self.arguments)
        return result is not None and all(s.lower() in result.lower() for s in self.result_contains)


class Judged(_Check):
    """The environment's own judge passed the run: ``by`` names it (``tau2``: τ²-bench's
    evaluator, which replays the conversation's calls and compares the final database, what
    the agent said and the environment's assertions with the task's). A run passes on full
    reward, as τ²'s metrics count a success."""

    kind: Literal["judged"]
    by: str

    @field_validator("by")
    @classmethod
    def _a_judge(cls, by: str) -> str:
        installed.load()
        if by not in _JUDGES:
            raise ValueError(f"no judge {by!r}; the judges are: {', '.join(sorted(_JUDGES))}")
        return by

    def passes(self, run: Evidence) -> bool:
        reward = run.judged(self.by)
        return reward is not None and abs(reward - 1.0) <= 1e-6


BuiltIn = Annotated[
    Contains
    | ContainsAny
    | NotContains
    | Regex
    | FilesRead
    | ToolCalled
    | Observed
    | ObservedValue
    | Received
    | StatusIs
    | Presence
    | After
    | Judged
    | Answer,
    Field(discriminator="kind"),
]
# Kinds environments bring, by tag; the judges they name (``Judged.by``).
_REGISTERED: dict[str, type[BaseModel]] = {}
_JUDGES: set[str] = set()


def _registered(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A check of a kind an environment registered, read by its own model; any other by the
    union of this project's."""
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        if value["kind"] not in CHECK_KINDS:
            installed.load()
        model = _REGISTERED.get(value["kind"])
        if model is not None:
            return model.model_validate(value)
    if isinstance(value, BaseModel) and type(value) in _REGISTERED.values():
        return value
    return handler(value)


# A task's check: one of this project's kinds, or one an environment registered.
Check = Annotated[SerializeAsAny[BuiltIn], WrapValidator(_registered)]


def register_check(model: type[BaseModel], only_check: bool = False) -> type[BaseModel]:
    """Tasks may carry checks of ``model``'s kind (its ``kind`` field, one ``Literal`` tag,
    and its ``passes(run)``); a tag this project's kinds or another model hold is an error
    (``only_check``: say so, register nothing)."""
    kind = model.model_fields.get("kind")
    annotation: Any = None if kind is None else kind.annotation
    tags: tuple[Any, ...] = get_args(annotation) if get_origin(annotation) is Literal else ()
    if len(tags) != 1 or not isinstance(tags[0], str) or not callable(getattr(model, "passes", 0)):
        raise TypeError(f"{model.__name__}: a check kind has kind: Literal['tag'] and passes(run)")
    (tag,) = tags
    if tag in CHECK_KINDS or _REGISTERED.get(tag, model) is not model:
        raise ValueError(f"check kind {tag!r} is taken")
    if not only_check:
        _REGISTERED[tag] = model
    return model


def register_judge(name: str) -> str:
    """``judged`` checks may name ``name`` (an environment's own judge, whose rewards its
    dialogue's ``judge`` gives)."""
    _JUDGES.add(name)
    return name


# Checks on the answer's text, and checks that the run saw the fact the answer states.
ANSWER_KINDS = frozenset({"answer", "contains", "contains_any", "regex"})
EVIDENCE_KINDS = frozenset({"observed", "observed_value", "received", "files_read", "presence"})


def _kinds(union: Any) -> set[str]:
    """Every ``kind`` (and answer ``type``) tag of a discriminated union of check models."""
    tags: set[str] = set()
    for model in get_args(get_args(union)[0]):
        if get_origin(model) is Annotated:
            tags |= _kinds(model)
            continue
        for name in ("kind", "type"):
            annotation = model.model_fields[name].annotation if name in model.model_fields else None
            if get_origin(annotation) is Literal:
                tags |= set(get_args(annotation))
    return tags


# Read from the union itself, so a task file's error points past every kind there is.
CHECK_KINDS = frozenset(_kinds(BuiltIn))
