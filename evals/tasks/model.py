"""The task model: a question, the checks that score it, and what it runs on (a workspace of
files, or the fields an environment declares, ``evals.tasks.fields``: a database, a
repository, MCP servers, one of τ²'s tasks, a plugin's); a task set; what a question-blind
guess scores."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evals.tasks.answer_types import Facts, ListOf, NumberIs, OneOf, TypedAnswer, YesNo
from evals.tasks.checks import ANSWER_KINDS, EVIDENCE_KINDS, Check
from evals.tasks.fields import HELD, F, TaskFields, add, at_top, given_to, split, validated
from evals.tasks.users import UserScenario

# A task id names the task's folders (its scratch space, its state and trace files): letters,
# digits, '.', '_' and '-', starting with a letter or digit, so that no id can be a path.
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class HoldsFields(BaseModel):
    """A model that holds environments' fields (``evals.tasks.fields``): read from its top
    level as a task file writes them, held typed by key in its ``environment_fields`` (which
    each model declares last, so their problems come after its own), and written back at its
    top."""

    @model_validator(mode="before")
    @classmethod
    def _hold_environment_fields(cls, data: Any) -> Any:
        return split(data)

    @field_validator("environment_fields", mode="before", check_fields=False)
    @classmethod
    def _read_environment_fields(cls, held: Any) -> Any:
        return validated(held) if isinstance(held, dict) else held

    @model_serializer(mode="wrap")
    def _environment_fields_at_top(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            data.update(at_top(data.pop(HELD, None) or {}))
        return data


class Task(HoldsFields):
    """A question, its checks, and what it runs on; the fields environments declare are held
    in ``environment_fields``, by key, written at the task's top level in a task file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    checks: list[Check] = Field(min_length=1)
    # The tools this task needs, offered under the ``task`` tools setting. A task that declares
    # none is read-only, and that setting offers it the read-only tools.
    tools: list[str] | None = None
    # The files this task's workspace holds (name -> content); none: the three default files.
    workspace: dict[str, str] | None = None
    # The family a generated task belongs to (count, largest, ...): how results are grouped.
    kind: str | None = None
    # A simulated user the task is a conversation with (``evals.conversation``); none: the
    # question is asked once and answered once.
    user: UserScenario | None = None
    # Fields an environment declares (``evals.tasks.fields``), by key: written at the task's
    # top level in a task file, held here typed.
    environment_fields: dict[str, SerializeAsAny[TaskFields]] = {}

    def fields_of(self, model: type[F]) -> F | None:
        """The task's fields of ``model``'s key, or None where it has none."""
        found = self.environment_fields.get(model.key)
        return found if isinstance(found, model) else None

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        if not TASK_ID.fullmatch(value):
            raise ValueError(
                f"task id {value!r} must be letters, digits, '.', '_' or '-', starting with a "
                "letter or digit, at most 128 characters (it names the task's folders)"
            )
        return value

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
        if self.user is not None:
            asked["user"] = self.user.model_dump(exclude_none=True)
        for _, fields in sorted(self.environment_fields.items()):
            asked.update(fields.asked())
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
        """Its checks ask for an answer and for the tool result that answer must come from, or
        look at the state the run left (``after``, or the environment's own judge)."""
        kinds = {c.kind for c in self.checks}
        if kinds & {"judged", "after"}:  # the state the run left, read by the check itself
            return True
        return bool(kinds & ANSWER_KINDS) and bool(kinds & EVIDENCE_KINDS)


def _digest(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class TaskSet(HoldsFields):
    """Tasks, and the environments' fields written once at the set's top (``mcpServers``,
    ``intro``, ...): each task that has none of its own takes them (``fields.given_to``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    description: str = ""
    tasks: list[Task] = Field(min_length=1)
    environment_fields: dict[str, SerializeAsAny[TaskFields]] = {}

    @model_validator(mode="after")
    def _defaults_to_tasks(self) -> TaskSet:
        for task in self.tasks:
            task.environment_fields = given_to(task.environment_fields, self.environment_fields)
        return self

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


def register_fields(model: type[F], only_check: bool = False) -> type[F]:
    """Tasks may carry ``model`` (``evals.tasks.fields``) under its key; a key the task model
    has, or that another model holds, is an error (``only_check``: say so, register nothing)."""
    fields = {**Task.model_fields, **TaskSet.model_fields}
    aliases = (f.validation_alias for f in fields.values())
    taken = set(fields) | {a for a in aliases if isinstance(a, str)}
    return add(model, taken, only_check)


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
