"""Loop policies for small models: what each turn offers and asks, and how thin replies are met.

Each policy is a field of :class:`~harness.config.LoopConfig` and one helper here that the loop
calls; with the defaults every helper leaves the run as the plain loop would have it.

* ``tools``: which tools a run is offered (``offered_tools``);
* ``tool_choice`` (``required`` or a tool's name on the first turn, or ``always``),
  ``parallel_tool_calls``, ``max_tokens_per_turn`` and the penalties: what a
  request asks of the server (``turn_options``);
* ``submit``: a tool whose argument is the answer; the run completes on it (``submitted``);
* ``nudges``: a reply with neither a call nor text is answered with a request to go on
  (``nudge_if_empty``);
* ``repeat_guard``: a call identical to an earlier one is answered from the earlier result,
  with a note that it was already made (``repeated_result``, used by ``harness.execute``);
  under ``answer`` the turn after a repeated call is asked without tools (``tool_specs``),
  under ``submit`` it must call ``submit`` (``turn_options``);
* ``example``: one worked example in the system prompt (``system_prompt``);
* ``required_turns``: the first N replies must call a tool, so no answer comes before N looks
  (``turn_options``);
* ``act_after_error``: the reply after a failed call must call a tool, so an error is met with
  another look rather than with advice to the user (``turn_options``);
* ``grounding``: the system prompt asks for every file an answer depends on to be opened, and
  for the answer to say only what the tool results say (``system_prompt``);
* ``read_before_answer``: an answer given before any file was read is met, once, with a
  request to read the file it depends on (with the user's question), and the reply to that
  must call a tool (``ask_to_read_first``, ``turn_options``);
* ``read_listed``: an answer given while files that list_files showed are still unread is
  met with a request to read those the answer depends on (with the user's question, and no
  file name or count); the reply to it must call a tool. Never twice for the same unread
  files, and at most :data:`READ_LISTED_ASKS` times a run (``ask_to_read_listed``,
  ``turn_options``);
* ``listing`` and ``name_files_on_miss``: what the tools tell the model (``list_files`` sorted
  by size, biggest first; a missing file's error naming the files that exist), passed to the
  tools through their context by ``harness.execute``.

No text here is taken from any task set: the worked example is about another folder and
another question (a test checks this against the task files).
"""

from __future__ import annotations

import json
from typing import Any

from harness.client import TurnOptions
from harness.config import LoopConfig
from harness.state import RunState, asked_calls, last_reply, result_text
from harness.tools import Tool, ToolContext, listed_names

SUBMIT = "submit"

BASE_PROMPT = (
    "You are a careful assistant working in a folder of files. Use the tools to look at the "
    "files before you answer. When you know the answer, reply in one or two sentences."
)
SUBMIT_PROMPT = (
    "You are a careful assistant working in a folder of files. Use the tools to look at the "
    "files before you answer. When you know the answer, call submit with it, in one or two "
    "sentences."
)
# A different folder (recipes) and a different question; the calls are written as the model
# would send them.
EXAMPLE = (
    '\n\nAn example from another folder. Asked "Which recipe needs basil?", you call '
    "list_files {{}} and see soup.md, pasta.md and cake.md; you call read_file "
    '{{"path": "pasta.md"}} and read that it uses fresh basil; then you {finish}. '
    "Never guess a file name you have not seen, and never answer before you have read what "
    "the answer depends on."
)
EXAMPLE_ANSWER = "answer: pasta.md needs basil"
EXAMPLE_SUBMIT = 'call submit {"answer": "pasta.md needs basil."}'

GROUNDING = (
    " Before you answer, open every file your answer depends on; if the question concerns "
    "several files, open each of them, one call per file. Answer only with what the tool "
    "results say, and name the file each fact came from. Never guess a file name: use the "
    "names list_files gives."
)

NUDGE = (
    "Your last reply was empty. Call a tool to find out what you still need, or give your "
    "answer now."
)
# Said once to an answer given before any read (read_before_answer), with the user's question.
READ_FIRST = (
    "You have not read any file yet. Read the file your answer depends on with read_file. Then "
    "answer the question from the tool results: {question}"
)
READ_FIRST_HEAD = READ_FIRST.split(".")[0] + "."
READ_TOOL = "read_file"
LIST_TOOL = "list_files"
# Said to an answer given while listed files are unread (read_listed). It names no file and
# no number: a name or a count here would be an answer the model could copy (the last unread
# file, the number of files) without having read anything.
READ_LISTED_HEAD = "Some files list_files showed are still unread."
READ_LISTED = (
    READ_LISTED_HEAD + " If your answer depends on any of them, read it with read_file, one "
    "call per file. Then answer the question from the tool results: {question}"
)
READ_LISTED_ASKS = 3
# Which files were unread when it was asked, kept out of the transcript (in the run's meta):
# the request is not made twice for the same unread files.
READ_LISTED_META = "read_listed_unread"
NUDGE_SUBMIT = (
    "Your last reply was empty. Call a tool to find out what you still need, or call submit "
    "with your answer now."
)
REPEAT_END = "this is its earlier result. Use it, or do something else.]"
REPEAT_NOTE = "\n\n[You already made this exact call (turn {turn}); " + REPEAT_END


def signature(name: str, arguments: str) -> str:
    """A call's identity: its tool and its arguments, whatever their spacing or key order."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (json.JSONDecodeError, RecursionError):
        canonical = arguments
    return f"{name}:{canonical}"


def system_prompt(config: LoopConfig) -> str:
    prompt = SUBMIT_PROMPT if config.submit else BASE_PROMPT
    if config.grounding:
        prompt += GROUNDING
    if config.example:
        finish = EXAMPLE_SUBMIT if config.submit else EXAMPLE_ANSWER
        prompt += EXAMPLE.format(finish=finish)
    return prompt


async def _submit(args: dict[str, Any], _: ToolContext) -> str:
    # Never reached for a valid call (``submitted`` ends the run first); kept so the tool has
    # a body like every other.
    return str(args.get("answer", ""))


def submit_tool() -> Tool:
    return Tool(
        SUBMIT,
        "Give your final answer to the user. Call it once, when you know the answer.",
        {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The final answer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        _submit,
        read_only=True,
    )


def offered_tools(tools: list[Tool], config: LoopConfig, declared: list[str] | None) -> list[Tool]:
    """The tools this run is offered.

    ``all``: every tool given; ``read_only``: those that change nothing; ``task``: the ones the
    task declares, and for a task that declares none (a read-only task) the read-only ones.
    """
    if config.tools == "task" and declared is not None:
        chosen = [t for t in tools if t.name in declared]
    elif config.tools in ("task", "read_only"):
        chosen = [t for t in tools if t.read_only]
    else:
        chosen = list(tools)
    return [*chosen, submit_tool()] if config.submit else chosen


def turn_options(state: RunState, config: LoopConfig) -> TurnOptions:
    """What this turn's request asks of the server beyond the messages and tools."""
    choice: str | dict[str, Any] | None = None
    if config.repeat_guard == "submit" and config.submit and just_repeated(state):
        choice = {"type": "function", "function": {"name": SUBMIT}}
    elif config.tool_choice == "always" or (config.tool_choice == "required" and state.turns == 0):
        choice = "required"
    elif config.tool_choice not in ("auto", "required") and state.turns == 0:
        choice = {"type": "function", "function": {"name": config.tool_choice}}
    elif must_call(state, config):
        choice = "required"
    return TurnOptions(
        tool_choice=choice,
        # On is every server's default; sent only when off, so the plain loop's requests stay
        # as they were.
        parallel_tool_calls=None if config.parallel_tool_calls else False,
        max_tokens=config.max_tokens_per_turn,
        repetition_penalty=config.repetition_penalty,
        frequency_penalty=config.frequency_penalty,
        presence_penalty=config.presence_penalty,
        temperature=config.temperature,
        seed=config.seed,
    )


def must_call(state: RunState, config: LoopConfig) -> bool:
    """This turn's reply must call a tool: one of the first ``required_turns``, the reply after
    a failed call (``act_after_error``) or after a request to read (``read_before_answer``,
    ``read_listed``)."""
    return (
        state.turns < config.required_turns
        or (config.act_after_error and just_failed(state))
        or (config.read_before_answer and _asks_to_read(state.messages[-1]))
        or (config.read_listed and _asks_to_read_listed(state.messages[-1]))
    )


def just_failed(state: RunState) -> bool:
    """A call of the newest reply failed (refused, not found, declined...)."""
    return any(not run.ok for run in state.tool_log if run.turn == state.turns)


def just_repeated(state: RunState) -> bool:
    """The newest tool results include one the repeated-call guard answered: read from the
    tool log's typed record, so no file content can switch the guard's effect on."""
    return any(run.repeated for run in state.tool_log if run.turn == state.turns)


def tool_specs(
    state: RunState, config: LoopConfig, specs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The tools this turn's request offers: none right after a repeated call under the
    ``answer`` guard, so the model answers from what it has instead of asking again."""
    if config.repeat_guard == "answer" and just_repeated(state):
        return []
    return specs


def submitted(state: RunState, config: LoopConfig) -> str | None:
    """The answer, when the newest reply called ``submit`` with a text argument."""
    last = last_reply(state)
    if not config.submit or last is None:
        return None
    for call in state.messages[last[0]].get("tool_calls") or []:
        function = call.get("function") or {}
        if function.get("name") != SUBMIT:
            continue
        try:
            answer = json.loads(function.get("arguments") or "{}").get("answer")
        except (json.JSONDecodeError, RecursionError, AttributeError):
            continue
        if isinstance(answer, str):
            return answer
    return None


def nudge_if_empty(state: RunState, config: LoopConfig) -> None:
    """Ask the model to go on when its newest reply holds neither a call nor any text.

    The request joins the transcript, so a resumed run sees it; at most ``config.nudges`` per
    run. A reply cut at the length limit is left to the loop's own request to finish.
    """
    last = last_reply(state)
    newest = last is not None and last[0] == len(state.messages) - 1
    if not newest or not state.turn_records or state.concluding is not None:
        return  # a reply to the last call after a limit ends the run, empty or not
    message = state.messages[-1]
    if (
        message.get("tool_calls")
        or message.get("refusal")
        or (message.get("content") or "").strip()
    ):
        return
    if state.turn_records[-1].finish_reason == "length":
        return
    text = NUDGE_SUBMIT if config.submit else NUDGE
    if (
        sum(m.get("content") == text for m in state.messages if m["role"] == "user")
        >= config.nudges
    ):
        return
    state.messages.append({"role": "user", "content": text})


def ask_to_read_first(state: RunState, config: LoopConfig, offered: set[str]) -> None:
    """Meet an answer given before any file was read with :data:`READ_FIRST`, once per run
    (``read_before_answer``), when read_file is offered; the reply to it must call a tool
    (``turn_options``). A read counts when it succeeded. The request joins the transcript, so a
    resumed run does not ask twice."""
    if not config.read_before_answer or state.concluding is not None or READ_TOOL not in offered:
        return
    if not _answered_last(state):
        return  # a call, or an empty reply (nudge_if_empty's)
    if any(run.ok and run.name == READ_TOOL for run in state.tool_log):
        return
    if any(_asks_to_read(m) for m in state.messages):
        return
    state.messages.append({"role": "user", "content": READ_FIRST.format(question=_question(state))})


def _question(state: RunState) -> str:
    """The user's own question: the run's first user message."""
    return next((m.get("content") or "" for m in state.messages if m["role"] == "user"), "")


def _answered_last(state: RunState) -> bool:
    """The newest message is a reply with text and no call (an answer, for now)."""
    last = last_reply(state)
    if last is None or last[0] != len(state.messages) - 1:
        return False
    message = state.messages[-1]
    return not message.get("tool_calls") and bool((message.get("content") or "").strip())


def listed_files(state: RunState) -> list[str]:
    """The files successful list_files calls showed the model, in the order it saw them."""
    names: dict[str, None] = {}
    for run in state.tool_log:
        if run.ok and run.name == LIST_TOOL:
            names.update(dict.fromkeys(listed_names(result_text(state, run.call_id) or "")))
    return list(names)


def read_files(state: RunState) -> set[str]:
    """The paths of successful read_file calls."""
    paths = set()
    for run in state.tool_log:
        if run.ok and run.name == READ_TOOL:
            try:
                path = json.loads(run.arguments or "{}").get("path")
            except (json.JSONDecodeError, RecursionError, AttributeError):
                continue
            if isinstance(path, str):
                paths.add(path.strip().removeprefix("./"))
    return paths


def ask_to_read_listed(state: RunState, config: LoopConfig, offered: set[str]) -> None:
    """Meet an answer given while files list_files showed are unread with :data:`READ_LISTED`
    (``read_listed``), when read_file is offered; the reply to it must call a tool
    (``turn_options``). Not asked again while the same files are unread, nor more than
    :data:`READ_LISTED_ASKS` times a run. The requests are in the transcript and the unread
    files at each in the run's meta, both saved with the state, so a resumed run counts them."""
    if not config.read_listed or state.concluding is not None or READ_TOOL not in offered:
        return
    if not _answered_last(state):
        return
    done = read_files(state)
    unread = [name for name in listed_files(state) if name not in done]
    if not unread:
        return
    asked = state.meta.setdefault(READ_LISTED_META, [])
    if len(asked) >= READ_LISTED_ASKS or unread in asked:
        return
    asked.append(unread)
    request = READ_LISTED.format(question=_question(state))
    state.messages.append({"role": "user", "content": request})


def _asks_to_read_listed(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and str(message.get("content") or "").startswith(
        READ_LISTED_HEAD
    )


def _asks_to_read(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and str(message.get("content") or "").startswith(
        READ_FIRST_HEAD
    )


def repeated_result(
    state: RunState, tools: dict[str, Tool], name: str, arguments: str, config: LoopConfig
) -> tuple[str, str | None] | None:
    """The earlier result of an identical read-only call, with a note, and that call's error
    when it failed (a copy of a failure stays a failure); None if there is none."""
    tool = tools.get(name)
    if config.repeat_guard == "off" or tool is None or not tool.read_only:
        return None
    wanted = signature(name, arguments)
    turns = {c.id: c.turn for c in asked_calls(state)}
    for run in state.tool_log:
        if run.name == name and signature(run.name, run.arguments) == wanted:
            earlier = result_text(state, run.call_id)
            if earlier is not None:
                note = REPEAT_NOTE.format(turn=turns.get(run.call_id, run.turn))
                return earlier + note, None if run.ok else (run.error or "failed")
    return None
