"""Loop policies as objects: the registry is the one list of them, what a policy said is the
run's typed record (no text passes for it), and old states keep what they said."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from harness.config import LoopConfig
from harness.loop import run_loop
from harness.persist import load
from harness.policies import Hook, Prompt, Said, Setting, TurnPlan, UnknownSetting, registry
from harness.policies.base import Config
from harness.policies.conclude_on_limit import CONCLUDE
from harness.policies.nudges import NUDGE, NUDGE_SUBMIT
from harness.policies.read_before_answer import READ_FIRST
from harness.policies.read_listed import READ_LISTED
from harness.policies.reads import answered_last
from harness.policies.registry import BEGIN, END, with_table
from harness.policies.repeat_guard import REPEAT_NOTE
from harness.presets import add_preset_flags, preset, preset_from_args, presets
from harness.setup import Setup
from harness.state import SCHEMA_VERSION, RunState, new_run
from harness.tools import default_tools
from harness.workspace import create_workspace
from tests.fake_provider import answer, calls
from tests.helpers import ROOT
from tests.test_policies import recording

# Every request a policy words, as a question or a file could copy it.
WORDINGS = [
    READ_FIRST.format(question="q"),
    READ_LISTED.format(question="q"),
    NUDGE,
    NUDGE_SUBMIT,
    CONCLUDE.format(limit="max_turns"),
    REPEAT_NOTE.format(turn=1).strip(),
]
# The policies that read what they said: requests before a turn and what follows them.
SAYING = {
    "read_before_answer": True,
    "read_listed": True,
    "nudges": 2,
    "tool_choice": "auto",
    "repeat_guard": "answer",
    "name_files_on_miss": True,
}
LIST = calls(("l", "list_files", "{}"))
READ = calls(("r", "read_file", json.dumps({"path": "notes.txt"})))


async def _requests(
    tmp_path: Path, question: str, notes: str, replies: list[dict[str, Any]]
) -> tuple[list[tuple[Any, int]], RunState]:
    workspace = create_workspace(tmp_path / "ws", files={"notes.txt": notes, "a.txt": "x"})
    seen, client = recording(replies)
    async with client:
        config = LoopConfig.of(max_turns=6, **SAYING)
        state = await run_loop(
            new_run("m", question), client, Setup(default_tools(), workspace), config
        )
    return [(b.get("tool_choice"), len(b.get("tools", []))) for b in seen], state


@pytest.mark.parametrize("wording", WORDINGS)
async def test_no_question_or_file_worded_like_a_request_passes_for_one(
    tmp_path: Path, wording: str
) -> None:
    """A question, or a file's text, worded as a policy's request changes none of the
    requests the run makes and none of what the policies say."""
    replies = [answer("A"), LIST, READ, answer("B"), answer(""), answer("C")]
    plain, plain_state = await _requests(tmp_path / "plain", "q", "Meeting notes.", replies)
    as_question, q_state = await _requests(tmp_path / "q", wording, "Meeting notes.", replies)
    as_file, f_state = await _requests(tmp_path / "f", "q", "Notes.\n\n" + wording, replies)
    said = [a.hook for a in plain_state.asks]
    assert said == ["read_before_answer", "read_listed", "nudges"], said  # each was made
    assert as_question == plain and as_file == plain
    assert [a.hook for a in q_state.asks] == said == [a.hook for a in f_state.asks]
    assert any(wording in str(m.get("content")) for m in f_state.messages if m["role"] == "tool")


def test_a_version_2_state_keeps_what_its_policies_said(tmp_path: Path) -> None:
    """A state saved before asks were recorded: its requests are found once, by the words they
    had then, and read_listed's unread files move from the meta into its request."""
    v2 = {
        "run_id": "old",
        "model": "m",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": READ_FIRST.format(question="q")},  # the question
            {"role": "assistant", "content": ""},
            {"role": "user", "content": NUDGE},
            {"role": "assistant", "content": "A"},
            {"role": "user", "content": READ_FIRST.format(question="q")},
            {"role": "assistant", "content": "B"},
            {"role": "user", "content": READ_LISTED.format(question="q")},
        ],
        "meta": {"read_listed_unread": [["a.txt"]], "task_tools": None},
        "schema_version": 2,
    }
    (tmp_path / "old.json").write_text(json.dumps(v2))
    state = load(tmp_path, "old")
    assert state.schema_version == SCHEMA_VERSION == 4
    assert [(a.hook, a.at, a.data) for a in state.asks] == [
        ("nudges", 3, None),
        ("read_before_answer", 5, None),
        ("read_listed", 7, {"unread": ["a.txt"]}),
    ]
    assert "read_listed_unread" not in state.meta
    assert state.just_asked("read_listed") and not state.just_asked("nudges")


def test_a_version_3_state_reads_its_hooks_preset_and_settings_by_todays_names(
    tmp_path: Path,
) -> None:
    """Version 3 named the hook of a request, a run's preset and its config's settings
    ``policy``; a resumed run reads them as ``hook``, ``preset`` and ``settings``, and its
    config loads with the settings it was started with."""
    config = asdict(LoopConfig.of(max_turns=4, nudges=2))
    config["policy"] = config.pop("settings")
    v3 = {
        "run_id": "v3",
        "model": "m",
        "messages": [{"role": "user", "content": "q"}, {"role": "user", "content": NUDGE}],
        "asks": [{"policy": "nudges", "at": 1, "data": None}],
        "meta": {"policy": {"name": "guarded", "settings": {}}, "config": config},
        "schema_version": 3,
    }
    (tmp_path / "v3.json").write_text(json.dumps(v3))
    state = load(tmp_path, "v3")
    assert state.schema_version == 4 and state.just_asked("nudges")
    assert [(a.hook, a.at) for a in state.asks] == [("nudges", 1)]
    assert state.meta["preset"] == {"name": "guarded", "settings": {}}
    assert "policy" not in state.meta and "policy" not in state.meta["config"]
    loaded = LoopConfig.from_dict(state.meta["config"])
    assert (loaded.max_turns, loaded.settings["nudges"]) == (4, 2)
    # A config saved under the old key alone (no upgrade on the way) reads the same.
    assert LoopConfig.from_dict(config).settings == loaded.settings


def test_every_setting_is_a_flag_and_a_checked_preset_value() -> None:
    parser = argparse.ArgumentParser()
    add_preset_flags(parser)
    flags = {a.dest for a in parser._actions}
    assert set(registry.SETTINGS) <= flags
    args = parser.parse_args(["--preset", "guarded", "--nudges", "5", "--listing", "by_size"])
    chosen = preset_from_args(args)
    assert chosen.name == "guarded+nudges,listing"
    assert (chosen.settings["nudges"], chosen.settings["listing"]) == (5, "by_size")
    for name in presets():
        assert set(preset(name).settings) == set(registry.SETTINGS)
    with pytest.raises(UnknownSetting, match="'listing' is 'sideways'; it takes one of plain"):
        LoopConfig.of(listing="sideways")
    with pytest.raises(UnknownSetting, match="no setting 'nudge'; the settings are: tools"):
        LoopConfig.of(nudge=1)
    with pytest.raises(UnknownSetting, match="'nudges' is True; it takes a whole number"):
        LoopConfig.of(nudges=True)


def test_a_saved_config_from_before_policies_were_objects_loads() -> None:
    old = {"max_turns": 4, "tool_choice": "required", "dedupe": True, "prices": {}}
    config = LoopConfig.from_dict(old)
    assert config.max_turns == 4
    assert (config.settings["tool_choice"], config.settings["dedupe"]) == ("required", True)


class _Reminder(Hook):
    """A policy a user adds: an answer given after a call failed is met, once, with a reminder,
    and the reply to it must call a tool."""

    name = "remind"
    settings = (Setting("remind", False, "remind after a failure", "bool"),)

    def ask(self, state: RunState, config: Config, offered: set[str]) -> Said | None:
        failed = any(not r.ok for r in state.tool_log)
        answered = answered_last(state)
        if config.settings["remind"] and failed and answered and not state.asked(self.name):
            return Said("A call failed; try another before you answer.")
        return None

    def plan(self, state: RunState, config: Config, plan: TurnPlan) -> None:
        if state.just_asked(self.name):
            plan.require("required")


async def test_a_new_policy_is_one_object_and_one_registry_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing but the registry learns of it: the loop, the flags and the checks follow."""
    policy = _Reminder()
    monkeypatch.setattr(registry, "HOOKS", (*registry.HOOKS, policy))
    monkeypatch.setitem(registry.SETTINGS, "remind", policy.settings[0])
    from harness import hooks

    monkeypatch.setattr(hooks, "HOOKS", registry.HOOKS)
    missing = calls(("m", "read_file", json.dumps({"path": "nope.txt"})))
    seen, client = recording([missing, answer("A"), answer("B")])
    workspace = create_workspace(tmp_path / "ws")
    async with client:
        config = LoopConfig.of(remind=True)
        state = await run_loop(new_run("m", "q"), client, Setup(default_tools(), workspace), config)
    assert [a.hook for a in state.asks] == ["remind"]
    assert [b.get("tool_choice") for b in seen] == [None, None, "required"]
    parser = argparse.ArgumentParser()
    add_preset_flags(parser)
    assert parser.parse_args(["--remind"]).remind is True


def test_the_settings_table_in_the_docs_is_the_registrys() -> None:
    """docs/policies.md's table is generated from the registry: a setting added, removed or
    reworded without rebuilding it fails here."""
    page = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    rebuild = "rebuild it: python -m harness.policies --write docs/policies.md"
    assert with_table(page) == page, rebuild
    table = page.split(BEGIN)[1].split(END)[0]
    assert [line.split("`")[1].split()[0] for line in table.splitlines()[3:]] == [
        s.flag for s in registry.SETTINGS.values()
    ]


class _ToolCount(Hook):
    """A setting that needs context from the run's setup: the system prompt says how many
    tools the run has. One object; it reads the setup the loop was given through the prompt."""

    name = "tool_count"
    settings = (Setting("tool_count", False, "say how many tools the run has", "bool"),)

    def prompt(self, config: Config, prompt: Prompt) -> None:
        if config.settings["tool_count"] and prompt.setup is not None:
            prompt.rules.append(f" You have {len(prompt.setup.tools)} tools.")


async def test_a_setting_that_needs_the_runs_context_reads_it_from_the_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No keyword threaded through the loop: the hook reads the run's Setup."""
    hook = _ToolCount()
    monkeypatch.setattr(registry, "HOOKS", (*registry.HOOKS, hook))
    monkeypatch.setitem(registry.SETTINGS, "tool_count", hook.settings[0])
    from harness import hooks

    monkeypatch.setattr(hooks, "HOOKS", registry.HOOKS)
    seen, client = recording([answer("done")])
    setup = Setup(default_tools()[:2], create_workspace(tmp_path / "ws"))
    async with client:
        await run_loop(new_run("m", "q"), client, setup, LoopConfig.of(tool_count=True))
        await run_loop(new_run("m", "q"), client, setup, LoopConfig())
    assert seen[0]["messages"][0]["content"].endswith(" You have 2 tools.")
    assert "You have 2 tools." not in seen[-1]["messages"][0]["content"]  # the setting off
