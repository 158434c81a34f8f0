"""The simulated user's error rules: each flags what it names on labelled turns, and leaves a
user who does its part alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.conversation import STOP, TRANSFER
from evals.record import UserTurn
from lab.report.users import flags

SCENARIO = """Instructions:
	Domain: airline
	Reason for call:
		You want to cancel reservation EHGLP3.
	Known info:
		You are Emma Kim. Your user id is emma_kim_9957."""


def _rules(*turns: tuple[str, int, str | None], acts: bool = True) -> list[tuple[int, str]]:
    said = [UserTurn(text=t, calls_before=n, replying_to=r) for t, n, r in turns]
    return [(f.turn, f.rule) for f in flags(SCENARIO, said, acts=acts)]


def test_a_user_that_does_its_part_is_not_flagged() -> None:
    assert (
        _rules(
            ("Hi, I'd like to cancel my reservation EHGLP3. My user id is emma_kim_9957.", 0, None),
            ("Yes, please go ahead.", 2, "Your flight ABC123 costs $300. Shall I cancel EHGLP3?"),
            ("Flight ABC123, yes, that's the one.", 3, "Cancelled; refund to card 4421."),
            (STOP, 3, "Anything else?"),
        )
        == []
    )


def test_a_user_that_speaks_as_the_agent_is_flagged() -> None:
    assert _rules(("Hello! How can I assist you today?", 0, None)) == [
        (1, "plays_agent"),
        (1, "off_scenario"),  # and it says nothing of why it called
    ]
    later = ("Is there anything else I can help you with?", 1, "Done.")
    assert _rules(("Cancel EHGLP3.", 0, None), later) == [(2, "plays_agent")]


def test_a_user_that_stops_before_the_agent_acted_is_flagged_only_where_acts_count() -> None:
    opening = ("Cancel EHGLP3 please.", 0, None)
    assert _rules(opening, (STOP, 0, "Sure.")) == [(2, "early_stop")]
    assert _rules(opening, (STOP, 0, "Sure."), acts=False) == []
    assert _rules(opening, (TRANSFER, 1, "Transferring you.")) == []
    assert _rules((STOP, 0, None)) == [(1, "empty_stop")]


def test_a_user_that_writes_out_its_instructions_is_flagged() -> None:
    found = _rules(("Reason for call: You want to cancel reservation EHGLP3.", 0, None))
    assert found == [(1, "leaks")]
    assert _rules(("<scenario> cancel </scenario>", 0, None)) == [(1, "leaks")]


def test_a_user_that_states_an_identifier_nobody_gave_it_is_flagged() -> None:
    assert _rules(("My reservation is XYZ789, user id emma_kim_1234.", 0, None)) == [
        (1, "unknown_fact")
    ]
    # One the agent said first is known to the user; e-mails count as identifiers.
    assert _rules(
        ("Cancel EHGLP3.", 0, None),
        ("Yes, QQ77RR is the one.", 1, "I see flight QQ77RR on it."),
        ("Send it to emma@example.com", 1, "Where should the receipt go?"),
    ) == [(3, "unknown_fact")]


def test_a_user_that_repeats_the_agents_words_is_flagged() -> None:
    confused = "I'm sorry, but I'm not sure what you're asking. Could you please clarify?"
    assert _rules(("Cancel EHGLP3.", 0, None), (confused, 1, confused)) == [
        (2, "plays_agent"),
        (2, "echoes"),
    ]
    # Eight of the agent's words in a row, quoted back.
    heard = "Your reservation EHGLP3 has two passengers and one checked bag in economy."
    assert _rules(
        ("Cancel EHGLP3.", 0, None),
        ("Yes: has two passengers and one checked bag in economy, right.", 1, heard),
    ) == [(2, "echoes")]
    # Answering with a few of its words is talking, not echoing.
    assert _rules(("Cancel EHGLP3.", 0, None), ("Yes, two passengers.", 1, heard)) == []


def test_a_user_that_refuses_or_asks_to_be_told_more_speaks_as_the_agent() -> None:
    refusal = "I'm sorry, but I can't assist with that. Could you clarify your request?"
    assert (1, "plays_agent") in _rules((refusal, 0, None))
    confused = "I'm sorry, but I'm not sure what you're asking."
    assert _rules(("I want to cancel EHGLP3.", 0, None), (confused, 0, "Sure.")) == [
        (2, "plays_agent")
    ]


def test_a_first_message_with_nothing_of_the_scenario_is_off_it() -> None:
    assert _rules(("Hello there, good day!", 0, None)) == [(1, "off_scenario")]
    assert _rules(("Hi, please cancel my reservation.", 0, None)) == []
    # Only the first message: later ones answer what the agent said.
    assert _rules(("Cancel EHGLP3.", 0, None), ("Yes.", 1, "Shall I?")) == []


def test_a_labelled_sample_is_counted_by_conversation_and_readers_agree_where_either_said_ok(
    tmp_path: Path,
) -> None:
    """The conversation is the unit: a user that erred in one turn of a conversation erred in
    that conversation, and the interval is over conversations, not turns. Two readers are
    compared where either called a turn ok, and by conversation."""
    from lab.report.tau2 import heldout_text

    def row(talk: str, turn: int, text: str, label: str) -> dict[str, object]:
        return {
            "conversation": talk, "turn": turn, "scenario": SCENARIO, "replying_to": None,
            "calls_before": 0, "text": text, "earlier": [], "label": label, "why": "read",
        }  # fmt: skip

    first = [
        row("run/a/e1", 1, "Hello! How can I assist you today?", "error"),  # flagged
        row("run/a/e1", 2, "Cancel EHGLP3, and my dog is called Rex.", "error"),  # unflagged
        row("run/a/e1", 3, "Cancel reservation EHGLP3 please.", "ok"),
        row("run/b/e1", 1, "Hi, please cancel reservation EHGLP3.", "ok"),
        row("run/c/e1", 1, "Hi, please cancel reservation EHGLP3.", "ok"),
        row("run/c/e1", 2, "Cancel it, and my dog is called Rex.", "error"),
    ]
    # The second reader calls the dog an ok turn: one turn apart, and conversation c apart;
    # its file also holds a reading of a whole conversation, which is no turn.
    second = [{**r, "label": "ok"} if r["turn"] == 2 else {**r} for r in first]
    second.append({"conversation": "run/a/e1", "fault": "user"})
    # A conversation not labelled whole is counted neither as a conversation nor by its turns.
    first.append(row("run/d/e1", 1, "Hello! How can I assist you today?", "error"))
    first.append({**row("run/d/e1", 2, "Cancel it.", "ok"), "label": None})
    path = tmp_path / "heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in first))
    path.with_suffix(".second-reader.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in second)
    )
    text = heldout_text(path)
    assert "3 conversations (6 user turns)" in text
    assert "the user erred in 2 of 3 conversations" in text
    assert "at its first message in 1 of them" in text
    assert "agrees on whether the user erred in 2 of 3 conversations" in text
    # Turns either called ok: a/2, a/3, b/1, c/1, c/2; both did on a/3, b/1, c/1.
    assert "of the 5 turns either reader called ok, both did on 3" in text
    assert "flag 1 of the 3 turns labelled errors" in text and "0 of the 3 labelled ok" in text


def test_the_rules_read_a_labelled_turn_with_the_rows_before_it_and_the_first_rows_scenario(
    tmp_path: Path,
) -> None:
    """A sample's row holds neither its scenario (after the first turn) nor the turns before
    it: the rules are applied with both read from the conversation's earlier rows, as they
    were when each row carried its own copy."""
    from lab.report.samples import agreement

    def row(talk: str, turn: int, text: str, **more: object) -> dict[str, object]:
        return {"conversation": talk, "turn": turn, "replying_to": "Go on.", "calls_before": 1,
                "text": text, "label": "error", "why": "read", **more}  # fmt: skip

    # Turn 2 states an id the user gave at turn 1 (a known fact), turn 3 one from the
    # scenario (known too), turn 4 an id nobody gave (an invented one: flagged).
    talk = [
        row("run/a/e1", 1, "Hi, cancel EHGLP3, my friend's is KQZ7X2.", scenario=SCENARIO),
        row("run/a/e1", 2, "Yes, KQZ7X2 was my friend's."),
        row("run/a/e1", 3, "My user id is emma_kim_9957."),
        row("run/a/e1", 4, "Also cancel ZZTOP9 please."),
    ]
    # In any order: the rows are put back in turn order.
    found = agreement([talk[3], talk[1], talk[0], talk[2]])
    # Turn 1 is flagged (KQZ7X2 is in no scenario), 2 and 3 are not, 4 is.
    assert (found.labelled, found.errors, found.flagged_errors) == (4, 4, 2)
    # The same turns, each row with its own scenario and earlier turns (an older sample).
    older = [{**r, "scenario": SCENARIO,
              "earlier": [{"text": t["text"], "calls_before": 1, "replying_to": "Go on."}
                          for t in talk[: int(str(r["turn"])) - 1]]}
             for r in talk]  # fmt: skip
    assert agreement(older) == found


def test_a_sample_draws_whole_conversations_and_leaves_out_those_already_read() -> None:
    from lab.report.samples import sample_turns
    from tests.helpers import run_record

    def talk(task: str) -> object:
        said = [
            {"text": f"{task} one", "calls_before": 0},
            {"text": f"{task} two", "calls_before": 1},
        ]
        return run_record(task_id=task, epoch=1, conversation={"end": "user_stop", "said": said})

    runs = [("run", [talk(t) for t in ("a", "b", "c")])]
    scenarios = {t: f"scenario of {t}" for t in "abc"}
    first = sample_turns(runs, scenarios, 2, seed=7)  # type: ignore[arg-type]
    drawn = {str(r["conversation"]) for r in first}
    assert len(drawn) == 2 and len(first) == 4  # two whole conversations, every turn of each
    assert all(r["label"] is None for r in first)
    # Each conversation's rows in order, its scenario on the first only, no copy of the turns
    # before: a talk held to τ²'s step cap has a hundred user turns.
    assert [r["turn"] for r in first] == [1, 2, 1, 2]
    assert [("scenario" in r) for r in first] == [True, False, True, False]
    assert first[0]["scenario"] == "scenario of " + str(first[0]["conversation"]).split("/")[1]
    assert not any("earlier" in r for r in first)
    rest = sample_turns(runs, {}, 10, seed=7, exclude=frozenset(drawn))  # type: ignore[arg-type]
    assert {str(r["conversation"]) for r in rest} == {"run/a/e1", "run/b/e1", "run/c/e1"} - drawn


def test_a_user_that_never_replied_erred_though_no_rule_reads_a_word() -> None:
    from lab.report.users import user_errors
    from tests.helpers import run_record

    silent = run_record(task_id="a", epoch=1, conversation={"end": "user_error", "said": []})
    talked = run_record(
        task_id="b", epoch=1,
        conversation={"end": "user_stop", "said": [{"text": "Cancel EHGLP3.", "calls_before": 0}]},
    )  # fmt: skip
    found = user_errors([silent, talked], {"a": SCENARIO, "b": SCENARIO})  # type: ignore[list-item]
    assert (found.conversations, found.flagged_conversations, found.clean) == (2, 1, 1)


def test_the_run_header_names_the_caps_a_user_sets_that_tau2s_runner_lacks() -> None:
    from evals.cli import parser
    from evals.commands.tau2 import rules_said

    args = parser().parse_args(["tau2", "--budget", "1", "--task-timeout", "60",
                                "--max-tokens", "9000", "--user-temperature", "0.5"])  # fmt: skip
    said = rules_said(args)
    assert "a budget of $1.0 (tau2's: none)" in said
    assert "a time limit of 60.0 s (tau2's: none)" in said
    assert "9000 tokens a run (tau2's: no cap)" in said
    assert "greedy, the user at 0.5 (tau2's: 0)" in said


def test_every_setting_that_differs_from_tau2s_runner_is_named() -> None:
    """A run's table row names what τ²'s runner would not have used: a run made before its
    rules (no step cap in its record), a sampled run's temperature, a cap of ours; a run
    under τ²'s defaults names only the seed rule, said unused when greedy."""
    from evals.tau2.rules import differs

    defaults = {"max_steps": 200, "max_errors": 10, "max_user_turns": None,
                "temperature": None, "seeds": "tau2", "seed": 300, "max_turns": None}  # fmt: skip
    assert differs(defaults) == [
        "seed 300: one seed per task, epoch and side "
        "(tau2's: one per epoch, shared by every task and side; unused when greedy)"
    ]
    sampled = differs({**defaults, "temperature": 0.7, "max_user_turns": 10, "max_turns": 60})
    assert sampled == [
        "10 user messages (tau2's: no cap)",
        "temperature 0.7 (tau2's: 0)",
        "seed 300: one seed per task, epoch and side "
        "(tau2's: one per epoch, shared by every task and side)",
        "60 agent turns (tau2's: no cap)",
    ]
    old = differs({"max_turns": 60, "max_user_turns": 10, "temperature": 0.7, "seed": 1})
    assert old[0] == "no step or error cap (tau2's: 200 steps, 10 errors)"
    assert "10 user messages (tau2's: no cap)" in old and "temperature 0.7 (tau2's: 0)" in old
    # a seed other than τ²'s is said with both values
    assert (
        "one seed per epoch from 1 (tau2's: 300, one per epoch, shared by every task and side)"
        in old
    )
    # a run made before τ²'s rules with no seed (greedy) says so, beside τ²'s rule
    assert (
        "no seed (tau2's: 300, one per epoch, shared by every task and side; unused when greedy)"
        in differs({"max_turns": 60, "max_user_turns": 10})
    )
    assert differs({**defaults, "seed": 7})[0].startswith(
        "seed 7: one seed per task, epoch and side (tau2's: 300,"
    )


def test_a_runs_row_says_how_many_later_epochs_repeat_the_first() -> None:
    """Greedy epochs repeat the first one's talk but where the server's arithmetic differs:
    the row counts the later epochs whose talk (the user's words, the agent's calls and words,
    the end) is the first's; an error is no epoch."""
    from lab.report.tau2 import repeats
    from tests.helpers import run_record

    def talk(task: str, epoch: int, *said: str, status: str = "completed") -> Any:
        turns = [{"text": t, "calls_before": 0} for t in said]
        return run_record(task_id=task, epoch=epoch, status=status,
                          conversation={"end": "user_stop", "said": turns})  # fmt: skip

    records = [
        talk("a", 1, "Hi", "Cancel it."), talk("a", 2, "Hi", "Cancel it."),
        talk("a", 3, "Hi", "Change it."), talk("b", 1, "###STOP###"),
        talk("b", 2, "###STOP###"), talk("b", 3, status="error"),
    ]  # fmt: skip
    assert repeats(records) == (2, 3)
    assert repeats(records[:1]) == (0, 0)


def test_a_stop_before_any_call_is_early_only_where_the_task_expects_the_agent_to_act() -> None:
    """``early_stop`` holds a stop before the agent's first call against the user only on a
    task whose reward rests on what the agent does: where τ²'s evaluator found no action to
    expect (the database as it started is the right outcome), a stop is no error of the rule."""
    from lab.report.users import acts, user_errors
    from tests.helpers import run_record

    said = [
        {"text": "Hi, please cancel reservation EHGLP3.", "calls_before": 0},
        {"text": STOP, "calls_before": 0, "replying_to": "It cannot be cancelled."},
    ]

    def judged(task: str, action: dict[str, str] | None) -> Any:
        info = {"reward": 1.0, "info": {"action": action}}
        environment = {"name": "tau2", "domain": "airline", "task": task, "reward": 1.0,
                       "reward_info": info}  # fmt: skip
        return run_record(task_id=task, epoch=1, environment=environment,
                          conversation={"end": "user_stop", "said": said})  # fmt: skip

    none = judged("31", {"note": "No actions to evaluate"})
    some = judged("2", None)  # τ² writes no note where it checked actions
    assert (acts(none), acts(some)) == (False, True)
    assert acts(run_record(task_id="ours")) is True  # a task of ours: no word from τ²
    found = user_errors([none, some], {"31": SCENARIO, "2": SCENARIO})
    assert found.by_rule.get("early_stop") == 1
    assert (found.flagged_conversations, found.clean) == (1, 1)


def test_each_headline_runs_sample_is_a_paragraph_of_its_own(tmp_path: Path) -> None:
    from lab.report.tau2 import headline_text

    assert headline_text(tmp_path) == "No sample is labelled yet.\n"
    for run in ("airline-k4", "retail-k4"):
        row = {"conversation": f"{run}/t/e1", "turn": 1, "scenario": SCENARIO,
               "replying_to": None, "calls_before": 0, "text": STOP, "label": "error",
               "why": "stops first"}  # fmt: skip
        path = tmp_path / f"headline-{run}.jsonl"
        path.write_text(json.dumps(row) + "\n")
        path.with_suffix(".second-reader.jsonl").write_text(json.dumps(row) + "\n")
    text = headline_text(tmp_path)
    paragraphs = text.strip().split("\n\n")
    assert len(paragraphs) == 2  # the second readers' files are no samples of their own
    assert "`airline-k4`" in paragraphs[0] and "`retail-k4`" in paragraphs[1]
    assert all("agrees on whether the user erred in 1 of 1" in p for p in paragraphs)


def test_a_conversations_progress_line_shows_the_users_time_beside_the_agents_wall() -> None:
    """A talk's record keeps the agent's wall and the user's model time apart; the line each
    finished run prints shows both, so the agent's wall does not read as the talk's."""
    from evals.run.runner import result_line
    from tests.helpers import run_record

    talk = {"end": "user_stop", "said": [], "user_spent": {"requests": 3.0, "ms": 219253.8}}
    line = result_line(run_record(task_id="a", wall_ms=198410.6, conversation=talk))
    assert "wall= 198,411ms user=219,254ms" in line
    assert "user=" not in result_line(run_record(task_id="b", wall_ms=5.0))
    # Solo: the agent alone, no user model asked anything.
    alone = {"end": "agent_stop", "said": [], "user_spent": {"requests": 0.0, "ms": 0.0}}
    assert "user=" not in result_line(run_record(task_id="c", wall_ms=5.0, conversation=alone))


def test_each_superseded_run_stands_beside_the_run_that_replaced_it(tmp_path: Path) -> None:
    """The then-and-now table pairs a superseded run with its successor of the same name, or
    with four epochs where it had one, in the same mode; one whose successor is a ``.partial``
    is under way; one with none says so, and a run of another mode is no successor."""
    from lab.report.tau2 import rows_of, then_now_table
    from tests.helpers import run_record

    def run(code: str, *correct: bool, task_set: str = "tau2-airline-test") -> list[Any]:
        return [run_record(task_id=f"t{i}", epoch=1, correct=c, code_version=code,
                           task_set=task_set, conversation={"end": "user_stop", "said": []})
                for i, c in enumerate(correct)]  # fmt: skip

    old = [("airline-test-m", run("old1", False, False)), ("retail-test-m", run("old2", True)),
           ("airline-test-idle", run("old3", False)),
           ("telecom-test-m", run("old4", False))]  # fmt: skip
    now = [("airline-test-m-k4", run("new1", True, False)),
           ("telecom-test-m-k4", run("new2", True, task_set="tau2-telecom-test-solo"))]  # fmt: skip
    (tmp_path / "retail-test-m-k4.jsonl.partial").write_text("")
    text = then_now_table(rows_of(now), rows_of(old), tmp_path)
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()[2:]}
    assert rows["airline-test-m"][4:8] == ["airline-test-m-k4", "50 % [9, 91]", "user_stop 2",
                                          "new1; 1 |"]  # fmt: skip
    assert rows["airline-test-m"][1:4] == ["0 % [0, 66]", "user_stop 2", "old1; 1"]
    assert rows["retail-test-m"][4] == "under way"
    assert rows["airline-test-idle"][4] == "–"
    assert rows["telecom-test-m"][4] == "–"  # a solo run does not replace a conversation one
