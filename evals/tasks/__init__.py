"""Where a task enters: the task model (a question, the checks that score it, and the workspace
it runs on) and the task files beside this module (files6.json, generated sets)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evals.errors import EvalError
from evals.tasks.checks import (
    ANSWER_KINDS,
    ANSWER_TYPES,
    CHECK_KINDS,
    EVIDENCE_KINDS,
    After,
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
    Presence,
    Received,
    Regex,
    StatusIs,
    ToolCalled,
    TypedAnswer,
    YesNo,
)
from evals.tasks.users import Tau2Ref, UserScenario
from harness.mcp.config import ServerConfig

__all__ = [
    "ANSWER_KINDS",
    "ANSWER_TYPES",
    "DEFAULT_TASKS",
    "EVIDENCE_KINDS",
    "After",
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
    "Presence",
    "Received",
    "Regex",
    "RepositoryRef",
    "ServerConfig",
    "StatusIs",
    "Task",
    "TaskFileError",
    "TaskSet",
    "Tau2Ref",
    "ToolCalled",
    "TypedAnswer",
    "UserScenario",
    "YesNo",
    "chance_of",
    "checks_hash",
    "load_tasks",
    "task_file_problems",
    "task_hash",
    "write_taskset",
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


class RepositoryRef(BaseModel):
    """A git repository a task's questions are asked about, laid out in its workspace: a
    generated history, named by its seed, with the fingerprint of its commits."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["history"] = "history"
    seed: int
    fingerprint: str = Field(min_length=1)


# The MCP servers a task runs with, in the shape desktop clients use (``mcpServers``).
_SERVERS = Field(
    default=None,
    validation_alias=AliasChoices("mcpServers", "mcp_servers"),
    serialization_alias="mcpServers",
)


# A task id names the task's folders (its scratch space, its state and trace files): letters,
# digits, '.', '_' and '-', starting with a letter or digit, so that no id can be a path.
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
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
    # The git repository its workspace holds (the git family); none: plain files.
    repository: RepositoryRef | None = None
    # The MCP servers whose tools it runs with (``evals.environments.mcp``); none: this
    # project's own tools. A task set's ``mcpServers`` apply to its tasks that name none.
    mcp_servers: dict[str, ServerConfig] | None = _SERVERS
    # The calls that fetch every result this task's evidence checks ask for (tool, arguments):
    # what the question-blind strategies read first, on an environment whose tools are a
    # server's (evals.studies.strategies).
    reading: list[tuple[str, dict[str, Any]]] | None = None
    # What the system prompt says the run works on (``{workspace}``: its folder); none: the
    # environment's own words.
    intro: str | None = None
    # A simulated user the task is a conversation with (``evals.conversation``); none: the
    # question is asked once and answered once.
    user: UserScenario | None = None
    # One of τ²-bench's tasks (``evals.environments.tau2``), run in τ²'s own environment.
    tau2: Tau2Ref | None = None

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
        if self.database is not None:  # absent from file tasks, so their hashes stay
            asked["database"] = self.database.model_dump()
        if self.repository is not None:
            asked["repository"] = self.repository.model_dump()
        if self.intro is not None:
            asked["intro"] = self.intro
        if self.user is not None:
            asked["user"] = self.user.model_dump(exclude_none=True)
        if self.tau2 is not None:
            asked["tau2"] = self.tau2.model_dump()
        if self.mcp_servers is not None:
            asked["mcpServers"] = {
                n: c.model_dump(exclude_defaults=True) for n, c in self.mcp_servers.items()
            }
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


class TaskSet(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    description: str = ""
    # Servers, and the system prompt's opening, for every task that names none of its own.
    mcp_servers: dict[str, ServerConfig] | None = _SERVERS
    intro: str | None = None
    tasks: list[Task] = Field(min_length=1)

    @model_validator(mode="after")
    def _defaults_to_tasks(self) -> TaskSet:
        for task in self.tasks:
            if task.mcp_servers is None and self.mcp_servers is not None:
                task.mcp_servers = dict(self.mcp_servers)
            if task.intro is None and self.intro is not None:
                task.intro = self.intro
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


def write_taskset(taskset: TaskSet, out: Path) -> None:
    """``taskset`` as a task file: servers under ``mcpServers``, and the servers and intro its
    tasks share written once, at the top."""
    data = taskset.model_dump(exclude_none=True, by_alias=True)
    for name in ("mcpServers", "intro"):
        values = [t.get(name) for t in data["tasks"]]
        if values[0] is not None and all(v == values[0] for v in values):
            data[name] = values[0]
            for task in data["tasks"]:
                task.pop(name)
    keys = ["name", "description", "mcpServers", "intro", "tasks"]
    ordered = {k: data[k] for k in keys if k in data}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


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


def _yaml_line(text: str, path: tuple[str | int, ...]) -> int:
    """The line of the value at ``path`` in a YAML document (best effort: the deepest node the
    path reaches)."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    line = node.start_mark.line + 1 if node is not None else 1
    for step in path:
        if isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if getattr(k, "value", None) == step]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            found = node.value[step : step + 1]
        else:
            found = []
        if not found:
            break
        node = found[0]
        line = node.start_mark.line + 1
    return line


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def _read(path: Path) -> tuple[str, Any]:
    """The file's text and what it holds (JSON, or YAML read with ``yaml.safe_load``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read the task file ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    if _is_yaml(path):
        try:
            return text, yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f", line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise TaskFileError(f"{path}{line}: not valid YAML: {problem}") from exc
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}, line {exc.lineno}: not valid JSON: {exc.msg}") from exc


def _problems(path: Path, text: str, exc: ValidationError) -> list[str]:
    """Each problem pydantic found, as ``FILE, line N: field.path: what was expected``."""
    found = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if isinstance(p, (str, int)))
        # A bad check kind is reported under the kind's tag; point at the check itself.
        known = tuple(p for p in loc if not (isinstance(p, str) and p in CHECK_KINDS))
        if _is_yaml(path):
            line = _yaml_line(text, known)
        else:
            line = text.count("\n", 0, _offset_of(text, known)) + 1
        where = ".".join(str(p) for p in known) or "top level"
        found.append(f"{path}, line {line}: {where}: {error['msg']}")
    return list(dict.fromkeys(found))


def task_file_problems(path: str | Path) -> tuple[TaskSet | None, list[str]]:
    """The task set in ``path``, or None and every problem with it (file, line, field, what
    was expected)."""
    path = Path(path)
    try:
        text, data = _read(path)
    except TaskFileError as exc:
        return None, [str(exc)]
    try:
        return TaskSet.model_validate(data), []
    except ValidationError as exc:
        return None, _problems(path, text, exc)


def load_tasks(path: str | Path | None = None) -> TaskSet:
    """Read and check a task file (JSON, or YAML by its suffix); any problem is reported with
    its line before any run."""
    taskset, problems = task_file_problems(Path(path) if path else DEFAULT_TASKS)
    if taskset is None:
        more = (
            f" (and {len(problems) - 1} more: python -m evals check-tasks)" if problems[1:] else ""
        )
        raise TaskFileError(problems[0] + more)
    return taskset
