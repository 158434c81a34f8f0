"""Where a task enters: the task model (``model``: a question, the checks that score it
(``checks``, the answer types among them in ``answer_types``), and what it runs on), the
task-file reader (``files``) and the task files beside this module (files6.json, generated
sets)."""

from __future__ import annotations

from evals.tasks.answer_types import (
    ANSWER_TYPES,
    Answer,
    Facts,
    ListOf,
    NumberIs,
    OneOf,
    TypedAnswer,
    YesNo,
)
from evals.tasks.checks import (
    ANSWER_KINDS,
    CHECK_KINDS,
    EVIDENCE_KINDS,
    After,
    Check,
    Contains,
    ContainsAny,
    Evidence,
    FilesRead,
    NotContains,
    Observed,
    ObservedValue,
    Presence,
    Received,
    Regex,
    StatusIs,
    ToolCalled,
    register_check,
    register_judge,
)
from evals.tasks.fields import TaskFields
from evals.tasks.files import (
    DEFAULT_TASKS,
    TaskFileError,
    load_tasks,
    task_file_problems,
    write_taskset,
)
from evals.tasks.model import (
    TASK_ID,
    Task,
    TaskSet,
    chance_of,
    register_fields,
)
from evals.tasks.users import UserScenario
from harness.mcp.config import ServerConfig

__all__ = [
    "ANSWER_KINDS",
    "ANSWER_TYPES",
    "CHECK_KINDS",
    "DEFAULT_TASKS",
    "EVIDENCE_KINDS",
    "TASK_ID",
    "After",
    "Answer",
    "Check",
    "Contains",
    "ContainsAny",
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
    "ServerConfig",
    "StatusIs",
    "Task",
    "TaskFields",
    "TaskFileError",
    "TaskSet",
    "ToolCalled",
    "TypedAnswer",
    "UserScenario",
    "YesNo",
    "chance_of",
    "load_tasks",
    "register_check",
    "register_fields",
    "register_judge",
    "task_file_problems",
    "write_taskset",
]
