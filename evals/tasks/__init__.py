"""Where a task enters: the task model (a question, the checks that score it, and the workspace
it runs on) and the task files beside this module (files6.json, generated sets)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from evals.errors import EvalError
from evals.tasks.checks import (
    ANSWER_KINDS,
    ANSWER_TYPES,
    CHECK_KINDS,
    EVIDENCE_KINDS,
    Answer,
    Check,
    Contains,
    ContainsAny,
    Evidence,
    Facts,
    FilesRead,
    ListOf,
    NotContains,
    NumberIs,
    Observed,
    ObservedValue,
    OneOf,
    Regex,
    StatusIs,
    ToolCalled,
    TypedAnswer,
    YesNo,
)

__all__ = [
    "ANSWER_KINDS",
    "ANSWER_TYPES",
    "DEFAULT_TASKS",
    "EVIDENCE_KINDS",
    "Answer",
    "Check",
    "Contains",
    "ContainsAny",
    "DatabaseRef",
    "Evidence",
    "Facts",
    "FilesRead",
    "ListOf",
    "NotContains",
    "NumberIs",
    "Observed",
    "ObservedValue",
    "OneOf",
    "Regex",
    "StatusIs",
    "Task",
    "TaskFileError",
    "TaskSet",
    "ToolCalled",
    "TypedAnswer",
    "YesNo",
    "chance_of",
    "checks_hash",
    "load_tasks",
    "task_hash",
]

DEFAULT_TASKS = Path(__file__).parent / "files6.json"


class TaskFileError(EvalError):
    """A task file that cannot be used; the message names the file and the line at fault."""


class DatabaseRef(BaseModel):
    """The database a task's questions are asked about: a generated one, named by its source
    and seed, with the fingerprint of the rows the expected answers were computed on."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["bank"] = "bank"
    seed: int
    fingerprint: str = Field(min_length=1)


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
    # The database the task runs on (the sql family); none: a workspace of files.
    database: DatabaseRef | None = None

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
        asked: dict[str, Any] = {
            "question": self.question,
            "workspace": self.workspace,
            "tools": self.tools,
        }
        if self.database is not None:  # absent from file tasks, so their hashes stay
            asked["database"] = self.database.model_dump()
        return _digest(asked)

    @property
    def checks_hash(self) -> str:
        """How the answer is judged: the checks, hashed."""
        return _digest([c.model_dump(exclude_none=True) for c in self.checks])

    @property
    def answer(self) -> TypedAnswer | None:
        """The typed answer this task wants, when its checks state one."""
        typed = (c for c in self.checks if isinstance(c, TypedAnswer))
        return next(typed, None)

    @property
    def family(self) -> str:
        """What the task is grouped under where tasks are compared as one kind: its answer's
        type, and for one-of and number answers its kind (the largest, a count, ...). Yes/no
        questions pool, so the family holds both answers."""
        answer = self.answer
        if answer is None:
            return self.kind or self.id
        if answer.type in ("one_of", "number", "list"):
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

    @property
    def content_hash(self) -> str:
        """A hash of every task's content (``task_hash``) in order: two runs asked the same
        questions exactly when their task sets' hashes agree."""
        return _digest([t.task_hash for t in self.tasks])


def chance_of(task: Task) -> float:
    """One over the number of answers a question-blind strategy chooses among."""
    match task.answer:
        case OneOf(candidates=c):
            return 1 / len(c)
        case NumberIs(candidates=c):
            return 1 / len(set(c))
        case YesNo():
            return 0.5
        case Facts(facts=facts, expected=expected):
            return 1 / len(facts) if len(expected) == 1 else 1 / (2 ** len(facts) - 1)
        case ListOf(candidates=c, expected=expected):
            return 1 / math.comb(len(c), len(expected))
    return 0.0


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
        known = [p for p in loc if not (isinstance(p, str) and p in CHECK_KINDS)]
        line = text.count("\n", 0, _offset_of(text, tuple(known))) + 1
        where = ".".join(str(p) for p in known) or "top level"
        raise TaskFileError(f"{path}, line {line}: {where}: {first['msg']}") from exc
