"""Task files: read and checked (JSON, or YAML by its suffix), every problem reported with its
file, line and field before any run; and written back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evals import installed
from evals.errors import EvalError
from evals.tasks.checks import CHECK_KINDS
from evals.tasks.fields import HELD, TaskFieldErrors, lifted
from evals.tasks.model import TaskSet

DEFAULT_TASKS = Path(__file__).parent / "files6.json"
# The largest task file read, checked before it is read (the largest committed one is 0.5 MB).
TASK_FILE_LIMIT = 32 << 20


class NoAliases(yaml.SafeLoader):
    """YAML's safe loader without anchors and aliases: an alias repeats a node without its
    bytes, so a file of a few hundred bytes can stand for gigabytes once anything walks it
    (the task hash does); a task file has no need of them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in a task file", event.start_mark
            )
        return super().compose_node(parent, index)


class TaskFileError(EvalError):
    """A task file that cannot be used; the message names the file and the line at fault."""


def write_taskset(taskset: TaskSet, out: Path) -> None:
    """``taskset`` as a task file: each task's fields under the keys a task file takes, and
    those the fields' models name as shared (the MCP servers and intro) written once, at the
    top, where every task has the same."""
    data = taskset.model_dump(exclude_none=True, by_alias=True)
    shared = lifted()
    for name in shared:
        values = [t.get(name) for t in data["tasks"]]
        if values[0] is not None and all(v == values[0] for v in values):
            data[name] = values[0]
            for task in data["tasks"]:
                task.pop(name)
    keys = ["name", "description", *shared, "tasks"]
    ordered = {k: data[k] for k in keys if k in data}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(ordered, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


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
    node = yaml.compose(text, Loader=NoAliases)
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
    """The file's text and what it holds (JSON, or YAML read by YAML's safe loader without
    aliases); a file over ``TASK_FILE_LIMIT`` is refused before it is read."""
    try:
        size = path.stat().st_size
        if size > TASK_FILE_LIMIT:
            raise TaskFileError(
                f"{path}: {size:,} bytes; a task file may hold at most {TASK_FILE_LIMIT:,}"
            )
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read the task file ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    if _is_yaml(path):
        try:
            return text, yaml.load(text, Loader=NoAliases)
        except RecursionError as exc:
            raise TaskFileError(f"{path}: not a task file: it nests too deeply") from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f", line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise TaskFileError(f"{path}{line}: not valid YAML: {problem}") from exc
    try:
        return text, json.loads(text)
    except RecursionError as exc:
        raise TaskFileError(f"{path}: not a task file: it nests too deeply") from exc
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}, line {exc.lineno}: not valid JSON: {exc.msg}") from exc


def _problems(path: Path, text: str, exc: ValidationError) -> list[str]:
    """Each problem pydantic found, as ``FILE, line N: field.path: what was expected``."""
    found = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if isinstance(p, (str, int)))
        # A bad check kind is reported under the kind's tag; point at the check itself.
        # An environment's task field is written at the task's top level, not under HELD.
        known = tuple(p for p in loc if not (isinstance(p, str) and p in (*CHECK_KINDS, HELD)))
        cause = (error.get("ctx") or {}).get("error")
        # An environment's fields: each problem at its own path (the field's key on).
        each = cause.found if isinstance(cause, TaskFieldErrors) else [((), error["msg"])]
        for inner, msg in each:
            at = known + inner
            if _is_yaml(path):
                line = _yaml_line(text, at)
            else:
                line = text.count("\n", 0, _offset_of(text, at)) + 1
            where = ".".join(str(p) for p in at) or "top level"
            found.append(f"{path}, line {line}: {where}: {msg}")
    return list(dict.fromkeys(found))


def task_file_problems(path: str | Path) -> tuple[TaskSet | None, list[str]]:
    """The task set in ``path``, or None and every problem with it (file, line, field, what
    was expected)."""
    path = Path(path)
    installed.load()  # every environment's task fields, whatever was imported before
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
