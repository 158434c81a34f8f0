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
from evals.report.stats import pass_hat_k
from evals.tau2.bridge import Tau2, Tau2Unavailable, tau2_python
from tests.helpers import run_record

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


async def _conversation(domain: str, task: str, replies: list[Any], tmp_path: Path) -> Any:
    """One conversation of ``task`` through our loop: the agent's replies scripted, the user's
    two messages scripted (a request, then tau2's stop word)."""
    from evals.tau2.conversation import STOP, ScriptedUser, converse
    from tests.fake_provider import by_turn, fake_client

    client = fake_client(by_turn([(200, r) for r in replies]))
    user = ScriptedUser(["Hello, I need help with my booking.", STOP])
    async with Tau2() as tau2:
        return await converse(tau2, "c1", domain, task, client, "fake", user, tmp_path)


@needs_tau2
@pytest.mark.parametrize(("domain", "task"), [("airline", "2"), ("retail", "5")])
async def test_a_conversation_through_our_loop_is_judged_by_tau2(
    domain: str, task: str, tmp_path: Path
) -> None:
    """The whole path: a scripted user opens, our loop runs the agent (its calls executed by
    tau2's environment), the user stops, tau2's evaluator judges. An agent that makes the gold
    calls and says what it must scores 1.0; one that only talks scores 0."""
    import json as json_

    from evals.tau2.conversation import End
    from tests.fake_provider import answer, calls

    gold = _gold(domain, task)
    oracle = [
        calls((f"g{i}", name, json_.dumps(arguments)))
        for i, (name, arguments) in enumerate(gold["actions"])
    ]
    oracle.append(answer(" ".join(["Done.", *gold["communicate"]])))
    right = await _conversation(domain, task, oracle, tmp_path / "oracle")
    assert (right.end, right.reward, right.user_turns) == (End.USER_STOP, 1.0, 2), right
    assert right.state is not None and len(right.state.tool_log) == len(gold["actions"])
    assert all(run.ok for run in right.state.tool_log)
    idle = await _conversation(domain, task, [answer("How can I help?")], tmp_path / "idle")
    assert (idle.end, idle.reward) == (End.USER_STOP, 0.0)


@needs_tau2
async def test_a_call_tau2_refuses_is_an_error_the_agent_reads_and_the_talk_goes_on(
    tmp_path: Path,
) -> None:
    from evals.tau2.conversation import End
    from tests.fake_provider import answer, calls

    replies = [
        calls(("c1", "get_user_details", '{"user_id": "nobody_here"}')),
        answer("I could not find you."),
    ]
    outcome = await _conversation("airline", "2", replies, tmp_path)
    assert outcome.end is End.USER_STOP and outcome.reward == 0.0
    (run,) = outcome.state.tool_log
    assert not run.ok
    tool_message = next(m for m in outcome.state.messages if m["role"] == "tool")
    assert "not found" in tool_message["content"].lower()


@needs_tau2
async def test_the_model_user_is_prompted_as_tau2_prompts_its_user_and_sees_the_talk_from_its_side(
    tmp_path: Path,
) -> None:
    """The user model's system prompt is tau2's own (guidelines and the task's scenario); it is
    greeted first, its own words come back as its turns and the agent's as what it is told;
    its temperature and seed reach the request."""
    import httpx

    from evals.tau2.conversation import GREETING, STOP, ModelUser, converse
    from tests.fake_provider import answer, by_turn, fake_client

    seen: list[dict[str, Any]] = []
    user_says = by_turn([(200, answer("I want to cancel a booking.")), (200, answer(STOP))])

    def as_user(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return user_says(request)

    agent = fake_client(by_turn([(200, answer("Which booking?"))]))
    async with Tau2() as tau2:
        opened = await tau2.open("probe", "airline", "2")
        prompt = opened["user_prompt"]
        assert "<scenario>" in prompt and "noah_muller_9847" in prompt
        user = ModelUser(fake_client(as_user), "user-model", prompt, temperature=0.7, seed=11)
        outcome = await converse(tau2, "c", "airline", "2", agent, "agent-model", user, tmp_path)
    assert outcome.user_turns == 2 and outcome.reward == 0.0
    first, second = seen
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][0]["content"] == prompt and first["messages"][1]["content"] == GREETING
    assert [(m["role"], m["content"]) for m in second["messages"][2:]] == [
        ("assistant", "I want to cancel a booking."),
        ("user", "Which booking?"),
    ]
    assert (second["temperature"], second["seed"], second.get("tools")) == (0.7, 11, None)
