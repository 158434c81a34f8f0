"""τ² played by τ²'s own runner and by ``loopbench tau2`` on the same traffic: one scripted
provider plays the user and the agent for both (real uvicorn; τ²'s ``run_task`` in its own
virtualenv through LiteLLM, ours through the loop), and the rewards, the ends, the
trajectories' calls and the requests each sent the model agree. Conversation on airline (an
agent whose first reply is empty, a user who talks long before stopping), solo on telecom (the
gold calls, an agent that only says it is done, a ``done`` on the last step, the word in place
of the call), ground truth on airline."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.conversation import GREETING
from evals.tau2.bridge import Tau2, tau2_python
from serve_local.inprocess import running_server
from tests.fake_provider import answer, calls, server_app

needs_tau2 = pytest.mark.skipif(
    not tau2_python().exists(), reason="tau2's virtualenv (make tau2-venv) is not there"
)
pytestmark = [needs_tau2, pytest.mark.slow]

# τ²'s runner, as its CLI runs one task: its own agent and user, its orchestrator, its limits
# and evaluator; a task that raises scores 0 (its --skip-failed-samples).
THEIRS = """
import json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from tau2.registry import registry
from tau2.run import run_task

domain, split, task_id, agent, user, url, max_steps = sys.argv[1:8]
task = next(t for t in registry.get_tasks_loader(domain)(split) if str(t.id) == task_id)
args = {"api_base": url, "api_key": "unused", "temperature": 0.0}
try:
    sim = run_task(domain, task, agent=agent, user=user, llm_agent="openai/scripted",
                   llm_args_agent=dict(args), llm_user="openai/scripted",
                   llm_args_user=dict(args), max_steps=int(max_steps), max_errors=10,
                   seed=626729)
    calls = [tc.name for m in sim.messages if getattr(m, "tool_calls", None)
             for tc in m.tool_calls]
    out = {"reward": sim.reward_info.reward, "end": sim.termination_reason.value,
           "calls": calls}
except Exception as exc:
    out = {"reward": 0.0, "end": "agent_error", "raised": str(exc), "calls": []}
print("RESULT " + json.dumps(out))
"""


class Script:
    """Both sides, from what each request holds: the user by its own turns so far, the agent
    by its replies since the user's first message (or, alone, since the start). The agent's
    first reply is empty the first time a request is seen (``empty_first``), as a flaky model's
    may be; asked again, it goes on."""

    def __init__(
        self,
        gold: list[tuple[str, dict[str, Any]]],
        words: str,
        user_turns: int,
        empty_first: bool = False,
    ) -> None:
        self.gold, self.words, self.user_turns = gold, words, user_turns
        self.empty_first = empty_first
        self.seen: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.theirs: list[dict[str, Any]] = []  # τ²'s runner's requests, once both ran

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        messages = body["messages"]
        if "<scenario>" in messages[0]["content"]:  # the user
            own = sum(m["role"] == "assistant" and not m.get("tool_calls") for m in messages)
            if own >= self.user_turns:
                return httpx.Response(200, json=answer("Thanks. ###STOP###"))
            said = f"Hello, I need help with my booking (message {own + 1}).\n"  # kept as written
            return httpx.Response(200, json=answer(said))
        first = next((i for i, m in enumerate(messages) if m["role"] == "user"), 1)
        turn = sum(m["role"] == "assistant" for m in messages[first:])
        key = hashlib.sha256(request.content).hexdigest()
        self.seen[key] += 1
        if self.empty_first and turn == 0 and self.seen[key] == 1:
            return httpx.Response(200, json=answer(""))
        if turn < len(self.gold):
            name, arguments = self.gold[turn]
            return httpx.Response(200, json=calls((f"c{turn}", name, json.dumps(arguments))))
        if self.words == "done":  # alone: the stop tool
            return httpx.Response(200, json=calls((f"c{turn}", "done", "{}")))
        return httpx.Response(200, json=answer(self.words if turn == len(self.gold) else "Bye."))


@pytest.fixture
def serving() -> Iterator[Callable[[Script], Any]]:
    """A real server whose answers a test sets (``serving(script)`` returns its URL)."""
    holder: dict[str, Script] = {}
    app = server_app(lambda request: holder["script"](request), "scripted")
    with running_server(app) as url:

        def use(script: Script) -> str:
            holder["script"] = script
            return url

        yield use


# The tasks' gold, read from τ² once for the module (each worker start imports τ² anew).
SOLO = ("telecom", "test")
GOLDS = [("airline", "2", "conversation"), ("airline", "2", "gt")]


@functools.cache
def _read_golds() -> tuple[str, dict[tuple[str, str, str], Any]]:
    """The telecom test task the solo tests play (one with a ticket and actions), and the gold
    of every task and mode the module plays, from one worker."""

    async def read() -> tuple[str, dict[tuple[str, str, str], Any]]:
        async with Tau2() as tau2:
            listed = await tau2.tasks(*SOLO)
            solo = next(str(t["id"]) for t in listed if t["ticket"] and t["actions"])
            found = {}
            for i, key in enumerate([*GOLDS, (SOLO[0], solo, "solo")]):
                await tau2.open(f"gold-{i}", *key)
                found[key] = await tau2.gold(f"gold-{i}")
                await tau2.close(f"gold-{i}")
        return solo, found

    return asyncio.run(read())


def _solo_task() -> str:
    return _read_golds()[0]


def _gold(domain: str, task: str, mode: str) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    found = _read_golds()[1][(domain, task, mode)]
    gold = [(str(n), dict(a)) for n, a in found["actions"]]
    return gold, " ".join(["Done.", *map(str, found["communicate"])])


def _theirs(
    url: str, domain: str, split: str, task: str, agent: str, user: str, cwd: Path, steps: int
) -> Any:
    done = subprocess.run(
        [str(tau2_python()), "-c", THEIRS, domain, split, task, agent, user, url, str(steps)],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def _ours(url: str, domain: str, task: str, mode: str, tmp_path: Path, steps: int) -> Any:
    from evals.cli import main
    from evals.record import read_runs

    out = tmp_path / f"ours-{mode}-{len(list(tmp_path.glob('ours-*')))}.jsonl"
    flags = ["--domain", domain, "--task-ids", task, "--mode", mode, "--base-url", url]
    flags += ["--max-steps", str(steps)]
    assert main(["tau2", *flags, "--out", str(out)]) == 0
    (record,) = read_runs(out)
    return record


def _both(
    serving: Callable[[Script], str],
    script: Script,
    run: tuple[str, str, str],
    tmp_path: Path,
    steps: int = 200,
) -> tuple[Any, Any]:
    """(τ²'s result, our record) of one task on one script, each on a fresh copy of it, both
    under ``steps`` steps (τ²'s default 200)."""
    domain, task, mode = run
    agent = {"conversation": "llm_agent", "gt": "llm_agent_gt", "solo": "llm_agent_solo"}[mode]
    user = "dummy_user" if mode == "solo" else "user_simulator"
    theirs = _theirs(serving(script), domain, "test", task, agent, user, tmp_path, steps)
    fresh = type(script)(script.gold, script.words, script.user_turns, script.empty_first)
    ours = _ours(serving(fresh), domain, task, mode, tmp_path, steps)
    script.theirs = list(script.bodies)
    script.bodies[:] = fresh.bodies  # what our side sent, for the test to read
    return theirs, ours


def _as_sent(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request as the model reads it: its messages, tools and sampling, less what a chat
    template never reads (``tool_choice`` "auto" is the default where tools are given; an
    assistant message's absent content is null; LiteLLM repeats a call's name beside its
    function; the loop names the tool a result answers, which τ²'s runner leaves to the call's
    id) and the seed, ours one per task, epoch and side by design (docs/tau2.md, "Sampling")."""
    out = []
    for body in bodies:
        body = {k: v for k, v in body.items() if k != "seed"}
        if body.get("tool_choice") == "auto":
            del body["tool_choice"]
        messages = []
        for m in body["messages"]:
            if m["role"] == "assistant":
                m = {"content": None, **m}
                if m.get("tool_calls"):
                    m["tool_calls"] = [
                        {k: v for k, v in c.items() if k != "name"} for c in m["tool_calls"]
                    ]
            elif m["role"] == "tool":
                m = {k: v for k, v in m.items() if k != "name"}
            messages.append(m)
        out.append({**body, "messages": messages})
    return out


def _same_requests(script: Script) -> None:
    """Both runners sent the model the same requests, in the same order, side by side: the
    same messages (the greeting, the user's words, every call and τ²'s answer to it), the
    same tools, the same sampling. A provider that answers by what it is sent then gives both
    the same conversation, whatever it keys on."""
    theirs, ours = _as_sent(script.theirs), _as_sent(script.bodies)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        assert b == a, f"request {i} differs"


def test_a_conversation_on_airline_gets_tau2s_own_reward(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """A user that talks 35 times before it stops (past any user cap of ours before: τ² has
    none), an agent whose first reply is empty (τ² asks again) that then makes the gold calls
    and says what it must: τ²'s runner and ours judge it alike. The agent's history opens with
    τ²'s greeting; no request asks for parallel calls (τ²'s never do)."""
    gold, words = _gold("airline", "2", "conversation")
    script = Script(gold, words, user_turns=35, empty_first=True)
    theirs, ours = _both(serving, script, ("airline", "2", "conversation"), tmp_path)
    assert theirs["end"] == "user_stop" and theirs["reward"] == 1.0, theirs
    assert ours.conversation.end == "user_stop" and ours.conversation.user_turns == 36
    assert ours.environment.reward == theirs["reward"]
    agent = [b for b in script.bodies if "<policy>" in b["messages"][0]["content"]]
    assert agent and all(b["messages"][1] == {"role": "assistant", "content": GREETING}
                         for b in agent)  # fmt: skip
    assert not any("parallel_tool_calls" in b for b in script.bodies)
    _same_requests(script)


def test_an_agent_that_only_ever_replies_empty_scores_0_in_both(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """Every reply empty: τ² asks three more times, then its runner fails the conversation
    (0); ours ends it as ``agent_error``, judged 0, never an error left out of the rates."""

    class Empty(Script):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            if "<scenario>" in json.loads(request.content)["messages"][0]["content"]:
                return super().__call__(request)
            return httpx.Response(200, json=answer(""))

    script = Empty([], "", 3)
    theirs, ours = _both(serving, script, ("airline", "2", "conversation"), tmp_path)
    assert theirs["reward"] == 0.0
    assert ours.conversation.end == "agent_error" and ours.status != "error"
    assert ours.environment.reward == 0.0
    _same_requests(script)


def test_ten_failed_calls_end_the_conversation_as_tau2s_runner_ends_it(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """τ²'s ``max_errors``: the tenth failed call ends the talk (too_many_errors, 0) in both,
    before the agent's next reply; the agent reads τ²'s own error text, once prefixed. A call
    by a name no tool has goes to τ² as its runner sends it: τ² answers it in its own words
    (the loop answered it, naming our tools, and τ²'s trajectory lacked it)."""
    bad = [
        ("no_such_tool" if i % 3 == 0 else "get_user_details", {"user_id": f"nobody_{i}"})
        for i in range(12)
    ]
    script = Script(bad, "Bye.", 3)
    theirs, ours = _both(serving, script, ("airline", "2", "conversation"), tmp_path)
    assert (theirs["end"], theirs["reward"]) == ("too_many_errors", 0.0), theirs
    assert ours.conversation.end == "too_many_errors" and ours.conversation.errors == 10
    assert ours.environment.reward == 0.0 and ours.tool_runs == 10
    assert theirs["calls"] == [name for name, _ in bad[:10]]

    def read(bodies: list[dict[str, Any]]) -> list[str]:
        agent = [b for b in bodies if "<policy>" in b["messages"][0]["content"]]
        return [m["content"] for m in agent[-1]["messages"] if m["role"] == "tool"]

    ours_read = read(script.bodies)
    assert ours_read and all(t.startswith("Error: ") and "Error: Error" not in t for t in ours_read)
    assert ours_read == read(script.theirs)  # τ²'s words, call for call
    assert "Error: Tool 'no_such_tool' not found." in ours_read
    _same_requests(script)


@pytest.mark.parametrize("idle", [False, True], ids=["gold", "idle"])
def test_solo_on_telecom_gets_tau2s_own_reward(
    serving: Callable[[Script], str], tmp_path: Path, idle: bool
) -> None:
    """Alone with the ticket: the gold calls (the user's phone among them) then ``done``
    score 1.0 in both; ``done`` at once scores 0 in both."""

    task = _solo_task()
    gold, _ = _gold("telecom", task, "solo")
    script = Script([] if idle else gold, "done", user_turns=0)
    theirs, ours = _both(serving, script, ("telecom", task, "solo"), tmp_path)
    assert theirs["end"] == "agent_stop" and theirs["reward"] == (0.0 if idle else 1.0), theirs
    assert ours.conversation.end == "agent_stop" and ours.conversation.user_turns == 0
    assert ours.environment.reward == theirs["reward"]
    assert ours.spec.preset.settings["tool_choice"] == "always"
    assert ours.spec.preset.settings["stop_tool"] == "done"
    assert "done" not in ours.tools_called  # the stop tool never runs
    _same_requests(script)


def test_ground_truth_mode_on_airline_gets_tau2s_own_reward(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """The agent given the expected actions (τ²'s GT agent's prompt), with the user."""
    gold, words = _gold("airline", "2", "gt")
    script = Script(gold, words, 2)
    theirs, ours = _both(serving, script, ("airline", "2", "gt"), tmp_path)
    assert theirs["end"] == "user_stop" and theirs["reward"] == 1.0, theirs
    assert ours.environment.reward == theirs["reward"]
    assert ours.spec.task_set == "tau2-airline-test-gt"
    _same_requests(script)


@pytest.mark.parametrize("spare", [0, 1], ids=["done-on-the-last-step", "one-step-to-spare"])
def test_solo_done_on_the_last_step_is_tau2s_step_cap(
    serving: Callable[[Script], str], tmp_path: Path, spare: int
) -> None:
    """τ² reads its caps after the agent's stop: a ``done`` that makes the step count reach
    ``--max-steps`` ends at the cap, scored 0, in both; one step to spare, both judge the run.
    The ``done`` reply is one step (τ² makes it its stop word, no call left to answer); the
    first call is none, as τ² opens a solo run with it; each answer of the environment is one."""
    task = _solo_task()
    gold, _ = _gold("telecom", task, "solo")
    steps = 2 * len(gold) + spare
    script = Script(gold, "done", user_turns=0)
    theirs, ours = _both(serving, script, ("telecom", task, "solo"), tmp_path, steps)
    end = "agent_stop" if spare else "max_steps"
    assert (theirs["end"], theirs["reward"]) == (end, 1.0 if spare else 0.0), theirs
    assert ours.conversation.end == ("agent_stop" if spare else "step_cap")
    assert ours.conversation.steps == 2 * len(gold)
    assert ours.environment.reward == theirs["reward"]
    _same_requests(script)


def test_solo_words_that_name_the_stop_tool_fail_the_run_in_both(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """The gold calls, then the word "done" where the ``done`` call must be: τ²'s solo agent
    fails on a reply without a call (0), whatever its words; ours ends it as ``agent_error``."""

    class Says(Script):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            messages = json.loads(request.content)["messages"]
            if sum(m["role"] == "assistant" for m in messages) >= len(self.gold):
                return httpx.Response(200, json=answer("done"))
            return super().__call__(request)

    task = _solo_task()
    gold, _ = _gold("telecom", task, "solo")
    script = Says(gold, "done", user_turns=0)
    theirs, ours = _both(serving, script, ("telecom", task, "solo"), tmp_path)
    assert theirs["reward"] == 0.0 and theirs["end"] == "agent_error", theirs
    assert ours.conversation.end == "agent_error" and ours.status != "error"
    assert ours.environment.reward == 0.0
    _same_requests(script)


def test_a_call_whose_arguments_are_no_json_object_fails_the_conversation_in_both(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """τ²'s ``generate`` reads a call's arguments with ``json.loads`` and its runner fails the
    conversation when they are no object (0); ours ends it as ``agent_error``, judged 0, where
    the loop would have answered the call with why and gone on (the next call right)."""

    class Garbled(Script):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            messages = json.loads(request.content)["messages"]
            agent = "<scenario>" not in messages[0]["content"]
            first = next((i for i, m in enumerate(messages) if m["role"] == "user"), 0)
            if agent and not any(m["role"] == "assistant" for m in messages[first:]):
                garbled = ("c0", "get_user_details", '{"user_id": "x"')  # cut short
                return httpx.Response(200, json=calls(garbled))
            return super().__call__(request)  # its first reply garbled, then the gold

    gold, words = _gold("airline", "2", "conversation")
    script = Garbled(gold, words, user_turns=3)
    theirs, ours = _both(serving, script, ("airline", "2", "conversation"), tmp_path)
    assert (theirs["end"], theirs["reward"]) == ("agent_error", 0.0), theirs
    assert ours.conversation.end == "agent_error" and ours.status != "error"
    assert ours.environment.reward == 0.0 and ours.tool_runs <= 1


def test_a_users_call_whose_arguments_are_no_json_object_fails_the_conversation_in_both(
    serving: Callable[[Script], str], tmp_path: Path
) -> None:
    """Telecom's user holds the phone's tools: its call with arguments cut short fails τ²'s
    runner (0) as the agent's does; ours ends the conversation as ``user_error``, judged 0."""

    class Garbled(Script):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            messages = json.loads(request.content)["messages"]
            if "<scenario>" in messages[0]["content"]:
                return httpx.Response(200, json=calls(("u0", "check_status_bar", '{"a": ')))
            return super().__call__(request)

    task = _solo_task()  # a telecom test task; here held as a conversation
    script = Garbled([], "Bye.", user_turns=3)
    theirs, ours = _both(serving, script, ("telecom", task, "conversation"), tmp_path)
    assert (theirs["end"], theirs["reward"]) == ("agent_error", 0.0), theirs  # it raised
    assert ours.conversation.end == "user_error" and ours.status != "error"
    assert ours.environment.reward == 0.0


def test_the_user_opening_study_asks_as_taus_user_simulator_asks() -> None:
    """``lab/studies/tau2_user_opening.py`` (whose doing is telecom's user stopping at once)
    sends τ²'s user prompt, τ²'s greeting as the user's view of the agent, the user's phone
    tools and temperature 0, and writes back what the server said, one line a task; its two
    ablations take away the tools sent, then τ²'s guidelines for a user with tools too."""
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=answer("My mobile data is not working."))

    script = Path(__file__).resolve().parents[1] / "lab" / "studies" / "tau2_user_opening.py"
    with running_server(server_app(handle, "user")) as url:
        out = subprocess.run(
            [str(tau2_python()), "-I", str(script), url, "2"],
            capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
        arms = {}
        for arm in ("unheld", "none"):
            arms[arm] = subprocess.run(
                [str(tau2_python()), "-I", str(script), "--user-tools", arm, url, "1"],
                capture_output=True, text=True, timeout=300, check=True,
            ).stdout  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["content"] for line in lines] == ["My mobile data is not working."] * 2
    assert all(line["user_tools"] == 30 and line["calls"] == [] for line in lines)
    assert [line["arm"] for line in lines] == ["held", "held"]
    assert len(seen) == 4 and len({body["messages"][0]["content"] for body in seen[:2]}) == 2
    held, unheld, none = seen[0], seen[2], seen[3]
    for body in seen[:2]:
        assert body["temperature"] == 0.0 and len(body["tools"]) == 30
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][-1]["content"] == GREETING
    # the ablations: the same task's prompt with no tools sent; then τ²'s prompt for a user
    # who holds none (its guidelines for tools gone too)
    assert "tools" not in unheld and "tools" not in none
    assert unheld["messages"] == held["messages"]
    assert none["messages"][0]["content"] != held["messages"][0]["content"]
    assert none["messages"][1:] == held["messages"][1:]
    assert [json.loads(arms[arm])["user_tools"] for arm in ("unheld", "none")] == [0, 0]
