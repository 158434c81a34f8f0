"""Where a task enters: the task model (a question, the checks that score it, and the workspace
it runs on) and the task files beside this module (files6.json, generated sets)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evals.errors import EvalError

DEFAULT_TASKS = Path(__file__).parent / "files6.json"


class TaskFileError(EvalError):
    """A task file that cannot be used; the message names the file and the line at fault."""


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Contains(_Check):
    kind: Literal["contains"]
    value: str


class ContainsAny(_Check):
    kind: Literal["contains_any"]
    values: list[str] = Field(min_length=1)


class NotContains(_Check):
    kind: Literal["not_contains"]
    values: list[str] = Field(min_length=1)


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


class FilesRead(_Check):
    """``read_file`` returned content for these files (and, with ``exact``, no others)."""

    kind: Literal["files_read"]
    files: list[str] = Field(min_length=1)
    exact: bool = False


class ToolCalled(_Check):
    """A call of this tool was answered, whatever its outcome: a record of behaviour, never
    evidence (use ``observed`` for what the run learned)."""

    kind: Literal["tool_called"]
    name: str
    arguments: dict[str, Any] | None = None


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


class StatusIs(_Check):
    kind: Literal["status"]
    value: Literal["completed", "failed", "max_turns_exceeded", "budget_exceeded", "interrupted"]


class _Answer(_Check):
    """What kind of answer the task wants and the candidates it is chosen from: the answer is
    credited when it commits to the expected candidate and to no competing one. How an answer's
    commitment is read is :mod:`evals.scoring.answers`."""

    kind: Literal["answer"]


class OneOf(_Answer):
    """One of ``candidates`` (a file of the workspace, say)."""

    type: Literal["one_of"]
    expected: str = Field(min_length=1)
    candidates: list[str] = Field(min_length=2)

    @model_validator(mode="after")
    def _expected_is_a_candidate(self) -> OneOf:
        if self.expected not in self.candidates:
            raise ValueError(f"expected {self.expected!r} is not among the candidates")
        if len(set(self.candidates)) != len(self.candidates):
            raise ValueError("the candidates repeat one another")
        return self


class NumberIs(_Answer):
    """A number (a count, a setting's value) among ``candidates``, the numbers a question-blind
    answer could give; within ``tolerance`` of ``expected``."""

    type: Literal["number"]
    expected: float
    candidates: list[float] = Field(min_length=2)
    tolerance: float = Field(default=0.0, ge=0.0)

    @model_validator(mode="after")
    def _expected_is_a_candidate(self) -> NumberIs:
        if self.expected not in self.candidates:
            raise ValueError(f"expected {self.expected:g} is not among the candidates")
        return self


class YesNo(_Answer):
    """Yes or no, about ``subject`` (the file a question names)."""

    type: Literal["yes_no"]
    expected: bool
    subject: str = Field(min_length=1)


class Facts(_Answer):
    """Facts by source: the answer states some fact of every ``expected`` source and no fact of
    any other (``expected`` one file for "what does X say", every file for "read each one")."""

    type: Literal["facts"]
    expected: list[str] = Field(min_length=1)
    facts: dict[str, list[str]] = Field(min_length=1)

    @model_validator(mode="after")
    def _sources_have_facts(self) -> Facts:
        unknown = [s for s in self.expected if s not in self.facts]
        if unknown:
            raise ValueError(f"expected sources without facts: {', '.join(unknown)}")
        if any(not facts for facts in self.facts.values()):
            raise ValueError("every source needs at least one fact")
        return self


Answer = Annotated[OneOf | NumberIs | YesNo | Facts, Field(discriminator="type")]
ANSWER_TYPES = frozenset({"one_of", "number", "yes_no", "facts"})

Check = Annotated[
    Contains
    | ContainsAny
    | NotContains
    | Regex
    | FilesRead
    | ToolCalled
    | Observed
    | StatusIs
    | Answer,
    Field(discriminator="kind"),
]

# Checks on the answer's text, and checks that the run saw the fact the answer states.
ANSWER_KINDS = frozenset({"answer", "contains", "contains_any", "regex"})
EVIDENCE_KINDS = frozenset({"observed", "files_read"})


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    checks: list[Check] = Field(min_length=1)
    # The tools this task needs, offered under the ``task`` tools policy. A task that declares
    # none is read-only, and that policy offers it the read-only tools.
    tools: list[str] | None = None
    # The files this task's workspace holds (name -> content); none: the three default files.
    workspace: dict[str, str] | None = None
    # The family a generated task belongs to (count, largest, ...): how results are grouped.
    kind: str | None = None

    @field_validator("workspace")
    @classmethod
    def _plain_names(cls, files: dict[str, str] | None) -> dict[str, str] | None:
        for name in files or {}:
            if not name or "/" in name or "\\" in name or name.startswith("."):
                raise ValueError(f"workspace file {name!r} is not a plain file name")
        return files

    @property
    def task_hash(self) -> str:
        """What the model is asked: the question, the workspace and the tools, hashed. Runs of
        one task name under different hashes were asked different things."""
        return _digest(
            {"question": self.question, "workspace": self.workspace, "tools": self.tools}
        )

    @property
    def checks_hash(self) -> str:
        """How the answer is judged: the checks, hashed."""
        return _digest([c.model_dump(exclude_none=True) for c in self.checks])

    @property
    def answer(self) -> OneOf | NumberIs | YesNo | Facts | None:
        """The typed answer this task wants, when its checks state one."""
        typed = (c for c in self.checks if isinstance(c, OneOf | NumberIs | YesNo | Facts))
        return next(typed, None)

    @property
    def family(self) -> str:
        """What the task is grouped under where tasks are compared as one kind: its answer's
        type, and for one-of and number answers its kind (the largest, a count, ...). Yes/no
        questions pool, so the family holds both answers."""
        answer = self.answer
        if answer is None:
            return self.kind or self.id
        if answer.type in ("one_of", "number"):
            return f"{answer.type}: {self.kind}" if self.kind else answer.type
        if answer.type == "facts":
            return "facts: every file" if len(answer.expected) > 1 else "facts: one file"
        return answer.type

    @property
    def grounded(self) -> bool:
        """Its checks ask for an answer and for the tool result that answer must come from."""
        kinds = {c.kind for c in self.checks}
        return bool(kinds & ANSWER_KINDS) and bool(kinds & EVIDENCE_KINDS)


def _digest(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class TaskSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    tasks: list[Task] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: list[Task]) -> list[Task]:
        seen: set[str] = set()
        for task in tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} appears twice")
            seen.add(task.id)
        return tasks


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


# Read from the Check union itself: a new kind is one model there and one case in
# evals.scoring.checks.check_passes (which mypy holds to every kind, by assert_never).
_CHECK_KINDS = _kinds(Check)

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _offset_of(text: str, path: tuple[str | int, ...]) -> int:
    """Character offset of the value at ``path`` in a JSON document (best effort)."""
    i = _skip(text, 0)
    for step in path:
        if i >= len(text) or text[i] not in "{[":
            return i
        opening, container = text[i], i
        i = _skip(text, i + 1)
        index = 0
        found = False
        while i < len(text) and text[i] not in "}]":
            if opening == "{":
                key, i = _DECODER.raw_decode(text, i)
                i = _skip(text, _skip(text, i) + 1)  # past ':'
                found = key == step
            else:
                found = index == step
            if found:
                break
            _, i = _DECODER.raw_decode(text, i)
            i = _skip(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip(text, i + 1)
            index += 1
        if not found:
            return container  # the key is missing: point at the object that lacks it
    return i


def load_tasks(path: str | Path | None = None) -> TaskSet:
    """Read and check a task file; any problem is reported with its line before any run."""
    path = Path(path) if path else DEFAULT_TASKS
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read the task file ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}, line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    try:
        return TaskSet.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(p for p in first["loc"] if isinstance(p, (str, int)))
        # A bad check kind is reported under the kind's tag; point at the check itself.
        known = [p for p in loc if not (isinstance(p, str) and p in _CHECK_KINDS)]
        line = text.count("\n", 0, _offset_of(text, tuple(known))) + 1
        where = ".".join(str(p) for p in known) or "top level"
        raise TaskFileError(f"{path}, line {line}: {where}: {first['msg']}") from exc
