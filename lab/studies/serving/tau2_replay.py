"""One τ² conversation replayed through our server and llama.cpp's ``llama-server`` side by side
(``make bench BENCH_PARTS=tau2``): the agent's and the user's requests in the order the
conversation made them, each server with two slots, so that each side can keep its own prefix.

The conversation is a committed one (``results/tau2``), rebuilt request by request: the agent's
from its state file (τ²'s system prompt and tools, the talk so far), the user's from the
record (τ²'s user prompt, the greeting, the talk from the user's side). Every request asks for
a few tokens greedily, so both servers read the same prompts whatever they reply; what is
measured is the prompt work: the tokens each request computes (``prompt_n``) against the tokens
new to it (its prompt less the prompt of the same side's request before it, whose prefix it
extends), and the time the whole conversation takes. Target: computed ≤ 1.3 × new on ours, and
ours no slower than llama-server.

``make bench BENCH_PARTS=tau2-two`` replays the run's two longest conversations at once, each
in its order, through each server with four slots: both start with the same policy, so a
server that places a request by its prefix alone hands one conversation's agent the other's
sequence and reads its talk again at every turn; the same counts say whether it does."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from evals.conversation import GREETING
from evals.markdown import table
from evals.record import kept_file, read_runs, read_text
from evals.tau2.bridge import Tau2
from harness.persist import parse
from lab.studies.serving.common import Echo, Figures, Part, server_process
from serve_local import llama_server
from serve_local.models import QWEN_CODER
from serve_local.process import serve_command

ROOT = Path(__file__).resolve().parents[3]
RUN = ROOT / "results" / "superseded" / "tau2" / "airline-test-qwen2.5-coder-1.5b.jsonl"
THREADS, SLOTS, CTX = 2, 2, 16384
TWO_SLOTS = 4  # two conversations, each with a sequence for its agent and one for its user
MAX_TOKENS = 8
TARGET_COMPUTED = 1.3  # prompt tokens computed / tokens new to each request
SERVERS = ("ours", "llama-server")


def _chosen(run: Path, n: int = 1) -> list[Any]:
    """The conversations replayed: the run's ``n`` with the most requests of both sides."""
    records = [r for r in read_runs(run) if r.conversation is not None and r.run_id]
    return sorted(
        records,
        key=lambda r: (r.turns + len(r.conversation.said if r.conversation else []), r.task_id),
        reverse=True,
    )[:n]


async def _opened(domain: str, task: str) -> dict[str, Any]:
    async with Tau2() as tau2:
        return await tau2.open("bench", domain, task)


def requests(run: Path = RUN, record: Any = None) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """A conversation's requests in order: (side, body), and its task id; ``record``: the
    run's record of it (none: the run's longest)."""
    record = record if record is not None else _chosen(run)[0]
    state_file = kept_file(run, f"{record.run_id}.json")
    if state_file is None or record.conversation is None:
        raise SystemExit(f"{run}: the state of {record.task_id} is not kept")
    state = parse(read_text(state_file), state_file)
    opened = asyncio.run(_opened(record.environment.domain, record.environment.task))
    said = record.conversation.said
    user_messages = [{"role": "system", "content": opened["user_prompt"]},
                     {"role": "user", "content": GREETING}]  # fmt: skip
    ordered: list[tuple[str, dict[str, Any]]] = []

    def user_request(turn: Any) -> None:
        if turn.replying_to is not None:
            user_messages.append({"role": "user", "content": turn.replying_to})
        ordered.append(("user", {"messages": list(user_messages)}))
        user_messages.append({"role": "assistant", "content": turn.text})

    n_user = 0
    for i, message in enumerate(state.messages):
        if message["role"] == "user":  # a user turn: its request first, then the agent's
            user_request(said[n_user])
            n_user += 1
        if message["role"] == "assistant":
            ordered.append(("agent", {"messages": state.messages[:i], "tools": opened["tools"]}))
    for turn in said[n_user:]:  # the user's last word (its stop) never reached the agent
        user_request(turn)
    return record.task_id, ordered


def _send(url: str, body: dict[str, Any]) -> dict[str, Any]:
    payload = {"model": QWEN_CODER, "temperature": 0, "max_tokens": MAX_TOKENS, **body}
    start = time.perf_counter()
    response = httpx.post(f"{url}/chat/completions", json=payload, timeout=900)
    wall_ms = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    reply = response.json()
    timings = reply.get("timings") or {}
    return {
        "wall_ms": round(wall_ms, 1),
        "prompt_tokens": (reply.get("usage") or {}).get("prompt_tokens"),
        "prompt_n": timings.get("prompt_n"),
        "cache_n": timings.get("cache_n"),
    }


def _new_tokens(rows: list[dict[str, Any]], who: str) -> list[int]:
    """Tokens new to each request: its prompt less the previous prompt of the same side of the
    same conversation."""
    last: dict[tuple[Any, str], int] = {}
    new = []
    for row in rows:
        sent = int(row[who]["prompt_tokens"] or 0)
        side = (row.get("conversation"), row["side"])
        new.append(max(sent - last.get(side, 0), 0))
        last[side] = sent
    return new


def _counted(rows: list[dict[str, Any]], who: str, seconds: float) -> dict[str, Any]:
    new = _new_tokens(rows, who)
    computed = [int(r[who]["prompt_n"] or 0) for r in rows]
    return {
        "seconds": round(seconds, 1),
        "sent": sum(int(r[who]["prompt_tokens"] or 0) for r in rows),
        "new": sum(new),
        "computed": sum(computed),
        "computed_over_new": round(sum(computed) / max(sum(new), 1), 3),
    }


def _replayed(
    chosen: list[tuple[str, list[tuple[str, dict[str, Any]]]]], slots: int, echo: Echo
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """``chosen`` conversations sent at once through each server with ``slots`` slots, each
    conversation's requests one after another in their order: a row per request (its
    conversation, its side, each server's counts) and each server's wall seconds."""
    servers = (
        serve_command("llama", model=QWEN_CODER, threads=THREADS, slots=slots, ctx=CTX,
                      log_level="warning"),
        llama_server.command(QWEN_CODER, None, threads=THREADS, slots=slots, ctx_size=CTX),
    )  # fmt: skip
    rows = [{"conversation": i, "side": side} for i, (_, o) in enumerate(chosen) for side, _ in o]
    by_conversation = [[r for r in rows if r["conversation"] == i] for i in range(len(chosen))]
    seconds: dict[str, float] = {}
    for who, args in zip(SERVERS, servers, strict=True):
        with server_process(args) as (url, _, _):  # one model process at a time

            def talk(i: int, url: str = url, who: str = who) -> None:
                for row, (_, body) in zip(by_conversation[i], chosen[i][1], strict=True):
                    row[who] = _send(url, body)

            start = time.perf_counter()
            with ThreadPoolExecutor(len(chosen)) as pool:
                list(pool.map(talk, range(len(chosen))))
            seconds[who] = time.perf_counter() - start
        echo(f"   {who}: {seconds[who]:,.1f} s")
    return rows, seconds


def _figures(figures: Figures, rows: list[dict[str, Any]], seconds: dict[str, float]) -> Figures:
    """``figures`` with each server's counts over ``rows`` and the ratio of their times."""
    for who in SERVERS:
        figures[who] = _counted(rows, who, seconds[who])
    figures["time_ratio"] = round(
        figures["ours"]["seconds"] / figures["llama-server"]["seconds"], 3
    )
    return figures


def run(echo: Echo) -> Figures:
    task, ordered = requests()
    agent = sum(side == "agent" for side, _ in ordered)
    echo(f"   {task}: {len(ordered)} requests ({agent} agent, {len(ordered) - agent} user)")
    rows, _ = _replayed([(task, ordered)], SLOTS, echo)
    # One conversation's time: its requests' own, end to end.
    seconds = {who: sum(r[who]["wall_ms"] for r in rows) / 1000 for who in SERVERS}
    figures = {"task": task, "requests": len(rows), "slots": SLOTS, "rows": rows}
    return _figures(figures, rows, seconds)


def _table(f: Figures, seconds: str) -> str:
    """Each server's prompt tokens sent, new, computed, and the time, as a table."""
    rows = [
        [who, f[who]["sent"], f[who]["new"], f[who]["computed"],
         f"{f[who]['computed_over_new']:.2f}", f"{f[who]['seconds']:,.1f}"]
        for who in SERVERS
    ]  # fmt: skip
    head = ["server", "prompt tokens sent", "new to each request", "computed", "computed / new"]
    return table([*head, seconds], rows)


def _target(f: Figures) -> str:
    ours = f["ours"]
    met = "met" if ours["computed_over_new"] <= TARGET_COMPUTED else "missed"
    return (
        f"Target computed ≤ {TARGET_COMPUTED} × new on ours: {met} "
        f"({ours['computed_over_new']:.2f}); ours against llama-server's time: "
        f"{f['time_ratio']:.2f}"
    )


def render(f: Figures) -> list[str]:
    met_time = "met" if f["time_ratio"] <= 1.0 else "missed"
    return [
        f"One τ² conversation ({f['task']}, {f['requests']} requests of the agent and its user "
        f"in their order) replayed through each server with {f['slots']} slots, {MAX_TOKENS} "
        "tokens asked per request, so both read the same prompts.",
        "",
        _table(f, "seconds"),
        f"{_target(f)} ({met_time}).",
    ]


def docs(f: Figures) -> list[tuple[Path, str, str]]:
    return [(ROOT / "docs" / "tau2.md", "tau2-bench", "\n".join(render(f)) + "\n")]


PART = Part("tau2", run, render, docs, heading="τ²: one conversation through each server")


def run_two(echo: Echo) -> Figures:
    """The two longest conversations at once, each request of one after the one before it."""
    chosen = [requests(RUN, record) for record in _chosen(RUN, 2)]
    tasks = [task for task, _ in chosen]
    echo(f"   {' and '.join(tasks)}: {sum(len(o) for _, o in chosen)} requests")
    rows, seconds = _replayed(chosen, TWO_SLOTS, echo)
    figures = {"tasks": tasks, "requests": len(rows), "slots": TWO_SLOTS, "rows": rows}
    return _figures(figures, rows, seconds)


def render_two(f: Figures) -> list[str]:
    return [
        f"Two τ² conversations at once ({' and '.join(f['tasks'])}, {f['requests']} requests, "
        f"each conversation's in its order) through each server with {f['slots']} slots, "
        f"{MAX_TOKENS} tokens asked per request.",
        "",
        _table(f, "seconds (both)"),
        f"{_target(f)}.",
    ]


def docs_two(f: Figures) -> list[tuple[Path, str, str]]:
    return [(ROOT / "docs" / "tau2.md", "tau2-bench-two", "\n".join(render_two(f)) + "\n")]


PART_TWO = Part("tau2-two", run_two, render_two, docs_two, heading="τ²: two conversations at once")
