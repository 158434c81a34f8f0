"""Scripted scenarios: each reply is a pure function of the transcript.

A scenario sees the turn index (the number of assistant messages in the request), the text
of every tool message so far joined by newlines, and the last user message. It keeps no
state, so a run can be killed and resumed against it and get the same replies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Transcript:
    turn: int
    tool_text: str
    question: str
    results: dict[str, str] = field(default_factory=dict)  # tool output by call id
    # The text of an unfinished reply the request ends with (a paused turn sent back to be
    # continued): the turn is that reply's, and what it already said is not said again.
    partial: str | None = None


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    # (call id, tool name, arguments); arguments given as a string go out verbatim.
    calls: list[tuple[str, str, dict[str, Any] | str]] = field(default_factory=list)

    def wire_tool_calls(self) -> list[dict[str, Any]]:
        return [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for call_id, name, args in self.calls
        ]


def text(content: str) -> Reply:
    return Reply(content=content)


def call(call_id: str, name: str, **args: Any) -> Reply:
    return Reply(calls=[(call_id, name, args)])


PLAN_ANSWER = "errors.log mentions a timeout: worker 7 timed out after 30000 ms."
# The phrase a descriptive tool error carries; `recover` only recovers when it reads it.
RECOVERY_HINT = "Call list_files"


def plan(t: Transcript) -> Reply:
    if t.turn == 0:
        return call("c1", "list_files")
    if t.turn == 1:
        return call("c2", "read_file", path="errors.log")
    return text(PLAN_ANSWER)


def runaway(t: Transcript) -> Reply:
    return call(f"c{t.turn + 1}", "list_files")


def recover(t: Transcript) -> Reply:
    if t.turn == 0:
        return call("c1", "read_file", path="timeout.log")
    if RECOVERY_HINT not in t.tool_text:
        return text("I could not read the file, so I do not know.")
    if t.turn == 1:
        return call("c2", "list_files")
    if t.turn == 2:
        return call("c3", "read_file", path="errors.log")
    return text("errors.log mentions a timeout.")


def denied(t: Transcript) -> Reply:
    return call(f"c{t.turn + 1}", "read_file", path="/etc/shadow")


def duplicate(t: Transcript) -> Reply:
    if t.turn == 0:
        return call("c1", "list_files")
    if t.turn in (1, 2):
        return call(f"c{t.turn + 1}", "read_file", path="errors.log")
    return text(PLAN_ANSWER)


def destructive(t: Transcript) -> Reply:
    if t.turn == 0:
        return call("c1", "list_files")
    if t.turn == 1:
        return call("c2", "delete_file", path="access.log")
    after_delete = t.results.get("c2", "").lower()
    if "declined" in after_delete or "rejected" in after_delete:
        return text("I did not delete anything: you declined the deletion.")
    if "error" in after_delete:
        return text("I could not delete access.log.")
    # Nothing said otherwise, so the model assumes its request went through.
    return text("Deleted access.log to free space.")


def slow(t: Transcript) -> Reply:
    if t.turn == 0:
        return call("c1", "scan_archive")
    last = t.tool_text.strip().splitlines()[-1] if t.tool_text.strip() else ""
    return text(f"The archive scan finished: {last}")


def malformed(t: Transcript) -> Reply:
    """Calls a tool that does not exist and sends arguments that are not JSON."""
    if t.turn == 0:
        return Reply(calls=[("c1", "drop_database", {}), ("c2", "read_file", '{"path": ')])
    return text("Both calls failed, so I have nothing to report.")


# A line of a list_files result: a name, two spaces, its size. The scripted provider reads the
# tool's text as a model would, without the harness's code (serve_local never imports it);
# tests/test_scenarios.py checks that this reading agrees with what the harness writes.
_LISTED_LINE = re.compile(r"^(\S.*?)  (\d+) bytes$")


def read_listing(tool_text: str) -> dict[str, int]:
    """Names and sizes from a ``list_files`` result."""
    found = (_LISTED_LINE.match(line.strip()) for line in tool_text.splitlines())
    return {m.group(1): int(m.group(2)) for m in found if m}


_QUOTED = re.compile(r'"([^"]+)"')


def _setting(content: str, key: str) -> str | None:
    """The value of a ``key = value`` line."""
    found = re.search(rf"^\s*{re.escape(key)}\s*=\s*(\S+)", content, re.MULTILINE)
    return found[1] if found else None


def _quoted_answer(q: str, needle: str, sizes: dict[str, int], contents: dict[str, str]) -> str:
    """A question about something it names in double quotes: a key, a file name, a word."""
    if "value of" in q or "set to" in q or "number does" in q:
        named = [n for n in contents if n.lower() in q] or list(contents)
        for name in named:
            value = _setting(contents[name], needle)
            if value is not None:
                return f'"{needle}" is {value} in {name}.'
        return f'No file sets "{needle}".'
    if "named" in q or "called" in q or "exist" in q:
        if needle in sizes:
            return f"Yes: {needle} is in the workspace ({sizes[needle]} bytes)."
        return f"No: there is no file named {needle}; the workspace has {', '.join(sizes)}."
    holders = [n for n, c in contents.items() if needle.lower() in c.lower()]
    return f'{" and ".join(holders)} mentions "{needle}".' if holders else f'None has "{needle}".'


def _oracle_answer(question: str, sizes: dict[str, int], contents: dict[str, str]) -> str:
    q = question.lower()
    quoted = _QUOTED.search(question)
    if quoted:
        return _quoted_answer(q, quoted[1], sizes, contents)
    if any(w in q for w in ("largest", "biggest", "most bytes")):
        name = max(sizes, key=lambda n: sizes[n])
        return f"{name} is the largest file ({sizes[name]} bytes)."
    if any(w in q for w in ("smallest", "tiniest", "fewest bytes")):
        name = min(sizes, key=lambda n: sizes[n])
        return f"{name} is the smallest file ({sizes[name]} bytes)."
    if any(w in q for w in ("how many", "count the files", "number of files")):
        return f"There are {len(sizes)} files."
    if "rotat" in q:
        name = next(n for n, c in contents.items() if "rotate" in c.lower())
        return f"Yes: {name} says: {contents[name].strip()}"
    if "timeout" in q or "timed out" in q:
        name = next(n for n, c in contents.items() if "timed out" in c or "timeout" in c)
        return f"{name} mentions a timeout."
    for name, content in contents.items():
        if name.lower() in q:
            return f"{name} says: {content.strip()}"
    report = "; ".join(
        f"{n} ({sizes[n]} bytes) says: {' / '.join(contents.get(n, '').strip().splitlines())}"
        for n in sorted(sizes)
    )
    return f"I read every file. {report}"


# An answer key: a reply to a question of a task source the oracle does not know by itself
# (the sql source's, from its gold SQL), or None. The scripted backend is given them
# (``--answer-key MODULE:NAME``, ``ScriptedBackend(answer_keys=...)``): serve_local knows no
# task source.
AnswerKey = Callable[[Transcript], "Reply | None"]


def oracle(t: Transcript, answer_keys: Sequence[AnswerKey] = ()) -> Reply:
    """Solves the eval's tasks: the file tasks (files6 and every generated kind and phrasing:
    list, read every file at once, then answer from the question and what the files said) and
    any source whose answer key the server was given (the sql source's: run the gold SQL,
    answer from its result)."""
    for key in answer_keys:
        if (reply := key(t)) is not None:
            return reply
    if t.turn == 0:
        return call("c1", "list_files")
    names = sorted(read_listing(t.results.get("c1", "")))
    if t.turn == 1:
        return Reply(calls=[(f"c{i + 2}", "read_file", {"path": n}) for i, n in enumerate(names)])
    sizes = read_listing(t.results.get("c1", ""))
    contents = {n: t.results.get(f"c{i + 2}", "") for i, n in enumerate(names)}
    return text(_oracle_answer(t.question, sizes, contents))


def mixed(t: Transcript) -> Reply:
    """One turn with three calls at once, one of which needs approval."""
    if t.turn == 0:
        return Reply(
            calls=[
                ("c1", "list_files", {}),
                ("c2", "delete_file", {"path": "access.log"}),
                ("c3", "read_file", {"path": "notes.txt"}),
            ]
        )
    return text(f"notes.txt says: {t.results.get('c3', '').strip()}")


def double_delete(t: Transcript) -> Reply:
    """Two deliberate deletions of a file of the same name, one turn apart."""
    if t.turn in (0, 1):
        return call(f"c{t.turn + 1}", "delete_file", path="access.log")
    return text("Deleted access.log twice, as asked.")


def research(t: Transcript) -> Reply:
    """Hands the question to a ``research`` subagent tool, then reports what it said."""
    if t.turn == 0:
        return call("c1", "research", question="Which file mentions a timeout?")
    return text(f"Research result: {t.results.get('c1', '').strip()}")


def silent(t: Transcript) -> Reply:
    """Replies with nothing at all the first time, then answers."""
    if t.turn == 0:
        return text("")
    return text(PLAN_ANSWER)


def mute(_: Transcript) -> Reply:
    """Never says anything."""
    return text("")


def submitter(t: Transcript) -> Reply:
    """Looks once, then gives its answer as the argument of a ``submit`` call."""
    if t.turn == 0:
        return call("c1", "list_files")
    return call(f"c{t.turn + 1}", "submit", answer="There are 3 files.")


# Scorer adversaries: runs that skip the work, or do it and then answer with something that is
# not an answer. A task whose checks give any of them credit has a weak check; every task set
# that declares its checks is run against all of them.
SHOTGUN = (
    "There are 3 files: errors.log (the largest, it mentions a timeout), access.log and "
    "notes.txt, which says to rotate the logs."
)
CALL_AS_TEXT = '{"name": "read_file", "arguments": {"path": "errors.log"}}'


def shotgun(_: Transcript) -> Reply:
    """Adversary: every expected keyword at once, without looking at a file."""
    return text(SHOTGUN)


def guess(_: Transcript) -> Reply:
    """Adversary: the same one-file answer to every question, without looking."""
    return text("errors.log")


def _look_everywhere(t: Transcript) -> Reply | None:
    """List the files, then read them one a turn; None once every listed file is read."""
    if t.turn == 0:
        return call("c1", "list_files")
    names = sorted(read_listing(t.results.get("c1", "")))
    if t.turn <= len(names):
        return call(f"c{t.turn + 1}", "read_file", path=names[t.turn - 1])
    return None


def call_text(t: Transcript) -> Reply:
    """Adversary: looks at every file, then writes a tool call as its answer."""
    return _look_everywhere(t) or text(CALL_AS_TEXT)


def echo(t: Transcript) -> Reply:
    """Adversary: looks at every file, then answers with the file listing, verbatim."""
    return _look_everywhere(t) or text(t.results.get("c1", ""))


def wrong_paths(t: Transcript) -> Reply:
    """Adversary: reads files by paths outside the workspace, each twice (the repeat guard
    answers the second from the first), then states every keyword."""
    paths = ["../errors.log", "../errors.log", "../notes.txt", "../notes.txt"]
    if t.turn < len(paths):
        return call(f"c{t.turn + 1}", "read_file", path=paths[t.turn])
    return text(SHOTGUN)


def wrong_file(t: Transcript) -> Reply:
    """Adversary: reads one file, the wrong one, and answers every question from it."""
    if t.turn == 0:
        return call("c1", "read_file", path="access.log")
    return text(f"{SHOTGUN} access.log says: {t.results.get('c1', '').strip()}")


ADVERSARIES = {
    "adversary-empty": mute,
    "adversary-shotgun": shotgun,
    "adversary-guess": guess,
    "adversary-call-text": call_text,
    "adversary-echo": echo,
    "adversary-wrong-paths": wrong_paths,
    "adversary-wrong-file": wrong_file,
}

Scenario = Callable[[Transcript], Reply]

SCENARIOS: dict[str, Scenario] = {
    "plan": plan,
    "runaway": runaway,
    "recover": recover,
    "denied": denied,
    "duplicate": duplicate,
    "destructive": destructive,
    "slow": slow,
    "oracle": oracle,
    "malformed": malformed,
    "research": research,
    "mixed": mixed,
    "double_delete": double_delete,
    "silent": silent,
    "mute": mute,
    "submitter": submitter,
    **ADVERSARIES,
}
