"""tau2-bench behind its pipe: its own package, in its own virtualenv, answers for its domains
and its metrics."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from evals.record import RunRecord
from evals.stats import pass_hat_k
from evals.tau2.bridge import Tau2, Tau2Unavailable, tau2_python
from evals.tau2.fields import Tau2Ref
from tests.helpers import run_record, run_tau2_task

needs_tau2 = pytest.mark.skipif(
    not tau2_python().exists(),
    reason=f"tau2's virtualenv is absent ({tau2_python()}): `make tau2-venv` creates it "
    "(`make test` does so first)",
)


def _records(counts: list[tuple[int, int]]) -> list[RunRecord]:
    """Task i tried n times, right c of them."""
    return [
        run_record(task_id=f"t{i}", epoch=e + 1, correct=e < c, task_set="t")
        for i, (n, c) in enumerate(counts)
        for e in range(n)
    ]


@needs_tau2
def test_pass_hat_k_is_tau2s_own_on_the_same_counts() -> None:
    rng = random.Random(7)
    trials = 4
    counts = [(trials, rng.randint(0, trials)) for _ in range(40)]

    async def theirs() -> list[float | None]:
        async with Tau2() as tau2:
            return [await tau2.pass_hat_k(counts, k) for k in range(1, trials + 1)]

    expected = asyncio.run(theirs())
    ours = [pass_hat_k(_records(counts), k) for k in range(1, trials + 1)]
    assert ours == pytest.approx(expected, abs=1e-12)
    assert ours[0] > ours[-1] > 0  # it falls with k, and some task is right every time


@needs_tau2
def test_the_domains_tools_come_from_tau2s_package() -> None:
    async def listed() -> dict[str, tuple[int, int]]:
        async with Tau2() as tau2:
            assert tau2.version == "26.3"
            found = {}
            for domain in ("airline", "retail", "telecom"):
                tools = await tau2.tools(domain)
                found[domain] = (len(tools["agent"]), len(tools["user"]))
            return found

    # The user holds the phone's tools in telecom only (dual control).
    assert asyncio.run(listed()) == {"airline": (14, 0), "retail": (15, 0), "telecom": (13, 30)}


def test_a_missing_virtualenv_names_the_command_that_makes_it(tmp_path: object) -> None:
    from pathlib import Path

    async def start() -> None:
        async with Tau2(Path("/nonexistent/python")):
            pass

    with pytest.raises(Tau2Unavailable, match="make tau2-venv"):
        asyncio.run(start())


@needs_tau2
@pytest.mark.parametrize(("domain", "task"), [("airline", "2"), ("retail", "5")])
def test_gold_actions_through_the_pipe_score_one_and_silence_zero(domain: str, task: str) -> None:
    """tau2's environment executes each call, its evaluator judges the trajectory: the gold
    actions (and what the agent must say) score 1.0; a conversation where the agent did
    nothing scores 0 on a task that changes the database."""

    async def run() -> tuple[float, float, dict[str, Any]]:
        async with Tau2() as tau2:
            (found,) = [t for t in await tau2.tasks(domain, "test") if t["id"] == task]
            assert found["reward_basis"] == ["DB", "COMMUNICATE"]
            opened = await tau2.open("gold", domain, task)
            assert "policy" in opened["policy"].lower() or len(opened["policy"]) > 1000
            gold = _gold(domain, task)
            await tau2.say("gold", "user", "Hello.")
            for name, arguments in gold["actions"]:
                content, failed = await tau2.call("gold", name, arguments)
                assert not failed, content
            for info in gold["communicate"]:
                await tau2.say("gold", "assistant", info)
            right = await tau2.evaluate("gold", "user_stop")
            await tau2.open("idle", domain, task)
            await tau2.say("idle", "user", "Hello.")
            idle = await tau2.evaluate("idle", "user_stop")
            return right["reward"], idle["reward"], right["info"]

    right, idle, info = asyncio.run(run())
    assert (right, idle) == (1.0, 0.0), info
    assert info["db_check"]["db_match"] is True


def _gold(domain: str, task: str) -> dict[str, Any]:
    """The task's gold actions and communicate items, read by tau2's own loader."""
    import json
    import subprocess

    script = (
        "import json, os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
        "from tau2.registry import registry\n"
        f"(t,) = [t for t in registry.get_tasks_loader({domain!r})('test') if t.id == {task!r}]\n"
        "c = t.evaluation_criteria\n"
        "print(json.dumps({'actions': [[a.name, a.arguments] for a in c.actions or []],"
        " 'communicate': list(c.communicate_info or [])}))\n"
    )
    done = subprocess.run(
        [str(tau2_python()), "-I", "-c", script], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _tau2_tasks(tmp_path: Path, picks: list[tuple[str, str]], script: list[str] | None) -> Path:
    """A task file of tau2 tasks (domain, tau2 id), as `evals tau2-tasks` writes them, each
    with the user's ``script`` when given (a scripted user)."""
    from evals.tasks import TaskSet, write_taskset
    from evals.tau2.tasks import as_taskset

    async def listed() -> list[Any]:
        async with Tau2() as tau2:
            return [
                as_taskset(d, "test", [t for t in await tau2.tasks(d, "test") if t["id"] == i], "")
                for d, i in picks
            ]

    tasks = [t for taskset in asyncio.run(listed()) for t in taskset.tasks]
    for task in tasks:
        assert task.user is not None
        task.user.script = script
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "tau2.json"
    write_taskset(TaskSet(name="tau2-picked", tasks=tasks), out)
    return out


def _eval(tasks: Path, url: str, tmp_path: Path, *flags: str) -> list[RunRecord]:
    from evals.cli import main
    from evals.record import read_runs

    out = tmp_path / f"run{len(list(tmp_path.glob('run*.jsonl')))}.jsonl"
    assert main(["run", "--base-url", url, "--tasks", str(tasks), "--out", str(out), *flags]) == 0
    return read_runs(out)


@needs_tau2
def test_oracle_and_idle_agents_through_the_whole_path_score_one_and_zero(
    scripted_url: str, tmp_path: Path
) -> None:
    """The eval's own path: task file, runner, the tau2 environment (its tools executed in
    tau2's environment), a scripted user, tau2's evaluator, the record. The oracle agent
    (the task's gold calls and words) scores 1.0 on an airline and a retail task; the agent
    that does nothing scores 0 where the task changes the database."""
    from evals.conversation import STOP

    tasks = _tau2_tasks(
        tmp_path, [("airline", "2"), ("retail", "5")], ["Hello, I need help.", STOP]
    )
    oracle = _eval(tasks, scripted_url, tmp_path, "--agent", "oracle")
    assert [(r.task_id, r.correct, r.status) for r in oracle] == [
        ("airline-2", True, "completed"),
        ("retail-5", True, "completed"),
    ]
    for record in oracle:
        assert record.environment.name == "tau2" and record.environment.reward == 1.0
        assert record.environment.reward_info["db_check"]["db_match"] is True
        assert record.conversation is not None
        assert (record.conversation.end, record.conversation.user_turns) == ("user_stop", 2)
        assert record.conversation.user.scripted and record.spec.label == "oracle-agent"
        assert record.tool_runs > 0 and record.tools_called
    # The HTML report shows the talk turn by turn: the user's words, the agent's calls, the
    # user's closing stop word, and how the conversation ended.
    from evals.report.view import render

    html = render(sorted(tmp_path.glob("run*.jsonl")))
    assert "Hello, I need help." in html and STOP in html
    assert "conversation ended: user_stop after 2 user turns (user: a script); reward 1" in html
    idle = _eval(tasks, scripted_url, tmp_path, "--agent", "idle")
    assert [(r.correct, r.status, r.environment.reward) for r in idle] == [
        (False, "completed", 0.0),
        (False, "completed", 0.0),
    ]
    assert all(r.tool_runs == 0 for r in idle)

    # A user whose first word is a stop: the talk ends before the agent's loop runs, and the
    # run is still a finished, judged one.
    silent = _tau2_tasks(tmp_path / "silent", [("airline", "2")], [STOP])
    (record,) = _eval(silent, scripted_url, tmp_path, "--agent", "idle")
    assert (record.status, record.turns, record.correct) == ("completed", 0, False)
    assert record.conversation is not None and record.conversation.end == "user_stop"


@needs_tau2
def test_a_user_model_that_is_down_or_never_stops_and_a_task_tau2_lacks(
    scripted_url: str, tmp_path: Path
) -> None:
    """A user model that is unreachable is the machinery's fault: an error record, the eval
    goes on, and --resume runs it again; one that never says it is done ends the talk at the
    user's turn cap (the agent's record, judged); a task tau2 does not have is an error."""
    from evals.cli import main
    from evals.record import read_runs
    from evals.tasks import load_tasks, write_taskset

    tasks = _tau2_tasks(tmp_path, [("airline", "2")], None)
    taskset = load_tasks(tasks)
    missing = taskset.tasks[0].model_copy(deep=True)
    missing.id = "airline-nowhere"
    ref = missing.fields_of(Tau2Ref)
    assert ref is not None
    ref.task = "no-such-task"
    taskset.tasks.append(missing)
    write_taskset(taskset, tasks)

    out = tmp_path / "down.jsonl"
    dead = ["--user-base-url", "http://127.0.0.1:9/v1", "--agent", "idle"]
    assert main(["run", "--base-url", scripted_url, "--tasks", str(tasks), "--out", str(out),
                 *dead]) == 0  # fmt: skip
    down, nowhere = read_runs(out)
    assert (down.status, down.correct, down.conversation.end) == ("error", False, "error")
    assert "user model failed" in (down.error or "")
    assert nowhere.status == "error" and "tau2 could not open the task" in (nowhere.error or "")

    # The scripted server's own model as the user: it never writes a stop word.
    capped = _eval(tasks, scripted_url, tmp_path, "--agent", "idle", "--max-user-turns", "2")
    assert capped[0].conversation is not None
    assert (capped[0].conversation.end, capped[0].conversation.user_turns) == ("step_cap", 2)
    assert capped[0].status == "completed" and capped[0].environment.reward == 0.0
    assert capped[0].conversation.user.model and not capped[0].conversation.user.scripted
    spent = capped[0].conversation.user_spent
    assert spent is not None and spent["requests"] == 2 and spent["prompt_tokens"] > 0

    # Resumed with a user that answers: only the errors run again.
    assert main(["run", "--base-url", scripted_url, "--resume", str(out), "--user-base-url",
                 scripted_url]) == 0  # fmt: skip
    resumed = read_runs(out)
    # The loop's own turn cap (ten model calls of the agent's, over the conversation): a cap
    # τ² does not have, "capped", judged as a conversation cut short.
    assert resumed[0].conversation is not None and resumed[0].conversation.end == "capped"
    assert resumed[0].environment.reward == 0.0


async def test_the_model_user_is_prompted_as_tau2_prompts_its_user_and_sees_the_talk_from_its_side(
    tmp_path: Path,
) -> None:
    """A model user's system prompt is what it is given (tau2's guidelines and scenario); it
    is greeted first, its own words come back as its turns and the agent's as what it is
    told; its temperature and seed reach the request; it is offered no tools unless it has
    its own."""
    import httpx

    from evals.conversation import GREETING, STOP, ModelUser, converse
    from harness.state import RunState
    from tests.fake_provider import answer, by_turn, fake_client

    seen: list[dict[str, Any]] = []
    user_says = by_turn([(200, answer("I want to cancel a booking.")), (200, answer(STOP))])

    def as_user(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return user_says(request)

    async def agent(state: RunState, _: Any) -> RunState:
        state.messages.append({"role": "assistant", "content": "Which booking?"})
        state.status, state.answer = "completed", "Which booking?"
        return state

    user = ModelUser(fake_client(as_user), "user-model", "THE PROMPT", temperature=0.7, seed=11)
    state = RunState(run_id="r", model="agent-model", messages=[])
    talk = await converse(state, agent, user)
    assert (talk.end, talk.user_turns) == ("user_stop", 2)
    first, second = seen
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][0]["content"] == "THE PROMPT"
    assert first["messages"][1]["content"] == GREETING
    assert [(m["role"], m["content"]) for m in second["messages"][2:]] == [
        ("assistant", "I want to cancel a booking."),
        ("user", "Which booking?"),
    ]
    assert (second["temperature"], second["seed"], second.get("tools")) == (0.7, 11, None)
    assert [m["role"] for m in state.messages] == ["user", "assistant"]


@needs_tau2
def test_a_call_tau2_refuses_is_an_error_the_agent_reads(tmp_path: Path) -> None:
    """The agent's calls that cannot run (a tool tau2 lacks, arguments its schema refuses, a
    user it does not know) come back as tool errors in the transcript (what the model reads),
    and the conversation goes on to its end."""
    from evals.conversation import STOP
    from evals.tasks import load_tasks
    from tests.fake_provider import answer, by_turn, calls, fake_client

    tasks = load_tasks(_tau2_tasks(tmp_path, [("airline", "2")], ["Hello.", STOP]))
    client = fake_client(
        by_turn([
            (200, calls(("c0", "book_a_spaceship", "{}"))),
            (200, calls(("c9", "get_user_details", '{"user_id": 5}'))),
            (200, calls(("c1", "get_user_details", '{"user_id": "nobody_here"}'))),
            (200, answer("I could not find you.")),
        ])
    )  # fmt: skip

    ran, _ = run_tau2_task(tasks.tasks[0], client, tmp_path, tasks=tasks.tasks)
    assert ran.talk is not None and ran.talk.end == "user_stop"
    assert ran.verdicts == {"tau2": 0.0}
    # A tool tau2 lacks, arguments its schema refuses, a user it does not know: each a tool
    # error in the transcript, and the talk goes on to its end.
    results = {m["tool_call_id"]: m["content"] for m in ran.state.messages if m["role"] == "tool"}
    assert "book_a_spaceship" in results["c0"]
    # Arguments of the wrong type go to tau2 as its runner sends them: it runs the call and
    # words the failure itself, and the call is in its trajectory.
    assert results["c9"] == "Error: User 5 not found"
    assert "not found" in results["c1"].lower()
    assert [r.ok for r in ran.state.tool_log if r.call_id == "c1"] == [False]
    assert ran.state.messages[0]["role"] == "system"
    assert "<policy>" in ran.state.messages[0]["content"]


@pytest.mark.parametrize("toggles", [True, False])
@needs_tau2
def test_telecoms_user_holds_the_phone_and_the_agent_never_sees_its_tools(
    tmp_path: Path, toggles: bool
) -> None:
    """Dual control: the user model is offered the phone's tools and its calls run on the
    user's side of tau2's environment (the task's fix is the user's: turn roaming on), where
    tau2's assertions read them; the agent is offered only its own tools."""
    import httpx

    from evals.tasks import load_tasks
    from tests.fake_provider import answer, calls, fake_client

    task_id = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"

    async def picked() -> Any:
        from evals.tasks import TaskSet, write_taskset
        from evals.tau2.tasks import as_taskset

        async with Tau2() as tau2:
            listed = [t for t in await tau2.tasks("telecom", "small") if t["id"] == task_id]
        out = tmp_path / "telecom.json"
        write_taskset(
            TaskSet(name="t", tasks=as_taskset("telecom", "small", listed, "").tasks), out
        )
        return load_tasks(out).tasks[0]

    task = asyncio.run(picked())
    agent_tools: list[list[str]] = []
    user_tools: list[list[str]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        offered = [t["function"]["name"] for t in body.get("tools") or []]
        if "<scenario>" not in body["messages"][0]["content"]:  # the agent
            agent_tools.append(offered)
            return httpx.Response(200, json=answer("Please turn roaming on, then try again."))
        user_tools.append(offered)
        own = [m for m in body["messages"] if m["role"] == "assistant"]
        if not own:
            return httpx.Response(200, json=answer("My mobile data is not working abroad."))
        if toggles and not any(m["role"] == "tool" for m in body["messages"]):
            return httpx.Response(200, json=calls(("u1", "toggle_roaming", "{}")))
        return httpx.Response(200, json=answer("###STOP###"))

    ran, _ = run_tau2_task(task, fake_client(handle), tmp_path)
    assert ran.state.error is None, ran.state.error
    assert ran.talk is not None and ran.talk.end == "user_stop"
    assert ran.verdicts == {"tau2": 1.0 if toggles else 0.0}
    assert agent_tools and all("toggle_roaming" not in tools for tools in agent_tools)
    assert all("enable_roaming" in tools for tools in agent_tools)
    assert user_tools and all("toggle_roaming" in tools for tools in user_tools)
    # The user's calls are its own: none is in the agent's transcript.
    assert not any(r.name == "toggle_roaming" for r in ran.state.tool_log)


async def test_a_user_model_that_replies_with_nothing_is_asked_again_then_ends_the_talk() -> None:
    """τ²'s ``generate`` asks again, three times, for a reply with neither words nor a call;
    one still empty fails the conversation (τ²'s runner scores it 0: ``user_error`` here, judged,
    not an error left out of the rates)."""
    from evals.conversation import End, ModelUser, converse
    from harness.state import RunState
    from tests.fake_provider import answer, fake_client

    async def agent(state: RunState, _: Any) -> RunState:
        raise AssertionError("the agent never runs: the user said nothing")

    asked: list[int] = []

    def handler(_: Any) -> Any:
        asked.append(1)
        return httpx_response(answer("  "))

    user = ModelUser(fake_client(handler), "u", "prompt", empty_retries=3)
    talk = await converse(RunState(run_id="r", model="m", messages=[]), agent, user)
    assert (talk.end, talk.error, len(asked)) == (End.USER_ERROR, None, 4)
    assert End.USER_ERROR.tau2 == "user_error"


def httpx_response(body: dict[str, Any]) -> Any:
    import httpx

    return httpx.Response(200, json=body)


@needs_tau2
def test_the_bench_replays_a_committed_conversation_request_by_request() -> None:
    """The tau2 bench part rebuilds a committed conversation's requests in their order: one
    per user message (tau2's user prompt, the greeting, the talk from its side) and one per
    agent turn (tau2's system prompt and tools, the talk so far)."""
    from evals.conversation import GREETING
    from evals.record import read_runs
    from lab.studies.serving import tau2_replay

    if not tau2_replay.RUN.exists():
        pytest.skip(f"{tau2_replay.RUN} is not committed")
    task, ordered = tau2_replay.requests()
    (record,) = [r for r in read_runs(tau2_replay.RUN) if r.task_id == task]
    assert record.conversation is not None
    users = [body for side, body in ordered if side == "user"]
    agents = [body for side, body in ordered if side == "agent"]
    assert len(users) == len(record.conversation.said) and len(agents) == record.turns
    assert ordered[0][0] == "user" and users[0]["messages"][1]["content"] == GREETING
    assert all("<policy>" in body["messages"][0]["content"] for body in agents)
    assert all(body["tools"] for body in agents)
    # Each user request after the first ends with the agent's words it answered.
    said = record.conversation.said
    assert [u["messages"][-1]["content"] for u in users[1:]] == [t.replying_to for t in said[1:]]


def test_two_conversations_at_once_count_what_is_new_to_each_by_its_own_talk() -> None:
    """With two conversations at once, a request's new tokens are its prompt less the previous
    prompt of the same side of the same conversation, not of the other conversation's."""
    from lab.studies.serving.tau2_replay import _counted, _new_tokens

    def row(conversation: int, side: str, sent: int, computed: int) -> dict[str, Any]:
        return {"conversation": conversation, "side": side,
                "ours": {"prompt_tokens": sent, "prompt_n": computed}}  # fmt: skip

    rows = [row(0, "agent", 5000, 5000), row(1, "agent", 5000, 10), row(1, "user", 300, 300),
            row(0, "agent", 5200, 200), row(1, "agent", 5100, 1100)]  # fmt: skip
    assert _new_tokens(rows, "ours") == [5000, 5000, 300, 200, 100]
    counted = _counted(rows, "ours", 12.34)
    assert (counted["new"], counted["computed"], counted["seconds"]) == (10600, 6610, 12.3)
    assert counted["computed_over_new"] == round(6610 / 10600, 3)


@needs_tau2
def test_the_tau2_command_runs_the_chosen_tasks_of_a_committed_split(
    scripted_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evals tau2`: the committed airline test split, one task chosen by its tau2 id, the
    oracle agent, the scripted server's model as the user (it never says a stop word, so the
    talk ends at the user's cap, which tau2's evaluator scores 0); one conversation at a time."""
    from evals.cli import main
    from evals.record import read_runs

    out = tmp_path / "tau2.jsonl"
    flags = ["--agent", "oracle", "--max-user-turns", "2", "--base-url", scripted_url]
    assert main(["tau2", "--domain", "airline", "--task-ids", "2", *flags, "--out", str(out),
                 "--epochs", "2"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    # The settings that differ from τ²'s runner's are said; pass^1..K end the output.
    assert "2 user messages (tau2's: no cap)" in printed and "200 steps" in printed
    # One task, wrong: Wilson's interval over one task, not a redraw's [0, 0].
    assert printed.rstrip().splitlines()[-2:] == ["  pass^1: 0.0% [0.0%, 79.3%]",
                                                  "  pass^2: 0.0% [0.0%, 79.3%]"]  # fmt: skip
    record = read_runs(out)[0]
    assert (record.task_id, record.spec.task_set) == ("airline-2", "tau2-airline-test")
    assert record.conversation is not None and record.conversation.end == "step_cap"
    assert (record.status, record.correct, record.environment.reward) == ("completed", False, 0.0)
    # τ²'s runner's rules: no cap on the agent's model calls, 200 steps, 10 errors, seeds drawn
    # from 300; the user-turn cap asked for is kept in the record, with the conversation's
    # other settings apart from the loop's.
    loop, talk = record.spec.loop, record.spec.conversation
    assert loop is not None and loop["max_turns"] is None and talk is not None
    assert (talk["max_steps"], talk["max_errors"], loop["seeds"], loop["seed"]) == (
        200, 10, "tau2", 300,
    )  # fmt: skip
    assert talk["max_user_turns"] == 2 and "max_user_turns" not in loop
    # Resumed, the run says its own rules (not the flags' defaults) and keeps one
    # conversation at a time.
    partial = out.with_name(out.name + ".partial")
    partial.write_text(out.read_text().splitlines()[0] + "\n")
    out.unlink()
    assert main(["tau2", "--resume", str(partial), "--base-url", scripted_url]) == 0
    printed = capsys.readouterr().out
    assert "tau2 conversation by its runner's rules" in printed
    assert "2 user messages (tau2's: no cap)" in printed and "one conversation at a time" in printed
    assert printed.rstrip().splitlines()[-1] == "  pass^2: 0.0% [0.0%, 79.3%]"
    assert len(read_runs(out)) == 2


async def test_solo_oracle_ends_with_done_after_its_gold_calls_and_the_idle_agent_at_once() -> None:
    """The ceiling and the floor of solo mode. τ²'s solo agent must end with ``done`` (words
    fail it: ``agent_error``), so the oracle makes the gold calls, the user's actions among
    them, then calls ``done``; the idle agent calls ``done`` at once. (Gold calls and ``done``
    through τ²'s own evaluator score 1.0: tests/test_tau2_parity.py; the committed solo runs'
    oracle and idle rows show the whole path.)"""
    from evals.run.taskrun import _agent_client

    class Gold:
        async def gold(self) -> tuple[list[tuple[str, dict[str, object]]], list[str]]:
            return [("toggle_roaming", {}), ("run_speed_test", {})], ["It works."]

    async def calls(agent: str) -> list[str]:
        client = await _agent_client(agent, Gold(), None, "done")  # type: ignore[arg-type]
        messages: list[dict[str, object]] = [{"role": "system", "content": "ticket"}]
        made: list[str] = []
        while not made or made[-1] != "done":
            reply = await client.chat("m", messages, [])
            assert reply.message.get("tool_calls"), reply.message  # never words, alone
            call = reply.message["tool_calls"][0]
            made.append(call["function"]["name"])
            messages += [reply.message, {"role": "tool", "tool_call_id": call["id"], "content": ""}]
        await client.aclose()  # type: ignore[attr-defined]
        return made

    assert await calls("oracle") == ["toggle_roaming", "run_speed_test", "done"]
    assert await calls("idle") == ["done"]


def test_epoch_seeds_are_tau2s_and_each_task_and_side_draws_its_own() -> None:
    """τ²'s runner draws its epochs' seeds (its trials') from 300 (``random.seed``, then
    ``randint``); ours are those, and each task and side derives its own from its epoch's, so
    no two tasks (nor the agent and the user of one) share a first draw."""
    from evals.run.servers import Serving
    from evals.run.settings import EvalSettings, epoch_seeds, eval_loop

    assert epoch_seeds(300, 5) == [626729, 373753, 361454, 1567, 514337]
    settings = EvalSettings(
        serving=Serving(base_url="http://unused.invalid/v1"), loop=eval_loop(seed=300),
        seeds="tau2",
    )  # fmt: skip
    drawn = {settings.seed_of(t, e, s) for t in ("a-1", "a-2") for e in (1, 2)
             for s in ("agent", "user")}  # fmt: skip
    assert len(drawn) == 8 and None not in drawn
    assert settings.seed_of("a-1", 2, "user") == settings.seed_of("a-1", 2, "user")
    plain = EvalSettings(serving=settings.serving, loop=eval_loop(seed=300))
    assert plain.seed_of("a-1", 2, "user") == plain.seed_of("a-2", 2, "agent") == 301


def test_a_flag_is_never_taken_for_the_start_of_another(capsys: pytest.CaptureFixture[str]) -> None:
    """``--mode`` is not ``--model``: argparse's prefix matching is off on every command."""
    from evals.cli import main

    with pytest.raises(SystemExit):
        main(["tau2", "--mod", "solo"])
    assert "unrecognized arguments: --mod" in capsys.readouterr().err


def test_arguments_are_read_as_tau2_reads_them() -> None:
    """``json.loads`` as they are: an empty string, a list, a cut object are no JSON object
    (τ²'s runner fails on each); ``{}`` is one."""
    from evals.conversation import unreadable
    from tests.fake_provider import calls

    def reply(*arguments: str) -> dict[str, Any]:
        return calls(*((f"c{i}", f"t{i}", a) for i, a in enumerate(arguments)))["choices"][0][
            "message"
        ]

    assert unreadable(reply("{}", '{"a": 1}')) is None
    assert [unreadable(reply("{}", bad)) for bad in ("", "[1]", '{"a": ', "null")] == ["t1"] * 4
    assert unreadable({"role": "assistant", "content": "words"}) is None
