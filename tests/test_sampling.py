"""Epochs that vary: a temperature and a seed per epoch reach the real packaged model through
the runner and the loop; the same seed gives the same reply, another seed another, on both
model backends; and no seed is left behind for the next request."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.record import kept_file, read_records, read_text
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from harness.presets import Preset, plain_settings
from serve_local.backends.llama import LlamaBackend
from serve_local.models import SMOLLM2, resolve
from tests.helpers import ROOT, post
from tests.models_fixtures import model_server

PROMPT = "Write a short poem about the sea."


@pytest.fixture(scope="module")
def smol() -> Iterator[str]:
    with model_server(LlamaBackend(resolve(SMOLLM2), n_ctx=1024)) as url:
        yield url


def reply(url: str, **extra: Any) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 24}
    response = post(url, {**body, **extra})
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def test_llama_same_seed_same_reply_other_seeds_others(smol: str) -> None:
    first = reply(smol, temperature=1.0, seed=7)
    reply(smol, temperature=1.0, seed=8)  # something else in between
    assert reply(smol, temperature=1.0, seed=7) == first
    others = {reply(smol, temperature=1.0, seed=s) for s in range(1, 6)}
    assert len(others) > 1


def test_llama_a_request_without_a_seed_does_not_reuse_the_last_one(smol: str) -> None:
    seeded = reply(smol, temperature=1.0, seed=8)
    unseeded = [reply(smol, temperature=1.0) for _ in range(3)]
    assert len({seeded, *unseeded}) > 1


def test_transformers_same_seed_same_reply_other_seeds_others(
    smol_transformers: tuple[Any, str],
) -> None:
    hf = smol_transformers[1]
    first = reply(hf, temperature=1.0, seed=7)
    reply(hf, temperature=1.0, seed=8)
    assert reply(hf, temperature=1.0, seed=7) == first
    assert len({reply(hf, temperature=1.0, seed=s) for s in range(1, 4)}) > 1


def one_task(folder: Path) -> Path:
    path = folder / "one.json"
    task = {
        "id": "sea",
        "question": PROMPT,
        "checks": [
            {"kind": "contains", "value": "sea"},
            {"kind": "observed", "tool": "read_file"},
        ],
    }
    path.write_text(json.dumps({"name": "one", "tasks": [task]}))
    return path


def sampled_eval(url: str, folder: Path, name: str, **extra: Any) -> list[str]:
    """The model's first reply in each epoch, read from the transcripts the eval kept."""
    short = Preset("short", {**plain_settings(), "max_tokens_per_turn": 24})
    sampling = {k: extra[k] for k in ("temperature", "seed") if k in extra}
    settings = EvalSettings(
        serving=Serving(base_url=url),
        tasks=one_task(folder),
        preset=short,
        out=folder / f"{name}.jsonl",
        epochs=extra.get("epochs", 1),
        loop=eval_loop(max_turns=1, **sampling),
    )
    run_file = asyncio.run(run_eval(settings, echo=lambda _: None))
    replies = []
    for record in read_records(run_file):
        assert record["spec"]["temperature"] == extra.get("temperature")
        assert record["seed"] == (extra["seed"] + record["epoch"] - 1 if "seed" in extra else None)
        state = kept_file(run_file, f"{record['run_id']}.json")
        assert state is not None
        messages = json.loads(read_text(state))["messages"]
        replies.append(next(m["content"] for m in messages if m["role"] == "assistant"))
    return replies


def test_epochs_sample_with_their_own_seeds_and_a_rerun_repeats_them(
    smol: str, tmp_path: Path
) -> None:
    sampled = {"temperature": 1.0, "seed": 100, "epochs": 3}
    first = sampled_eval(smol, tmp_path, "first", **sampled)
    assert len(first) == 3 and len(set(first)) > 1  # the epochs differ
    assert sampled_eval(smol, tmp_path, "again", **sampled) == first  # and repeat
    greedy = sampled_eval(smol, tmp_path, "greedy", epochs=2)
    assert greedy[0] == greedy[1]


async def test_greedy_epochs_warn_that_they_repeat_one_transcript(
    scripted_url: str, tmp_path: Path
) -> None:
    lines: list[str] = []

    async def run(name: str, epochs: int = 1, **sampling: Any) -> None:
        settings = EvalSettings(
            serving=Serving(base_url=scripted_url, model="scripted:plan"),
            out=tmp_path / f"{name}.jsonl",
            epochs=epochs,
            loop=eval_loop(**sampling),
        )
        await run_eval(settings, echo=lines.append)

    await run("greedy", epochs=2)
    assert any("2 greedy epochs (temperature 0) repeat one transcript" in x for x in lines)
    lines.clear()
    await run("sampled", epochs=2, temperature=0.7, seed=1)
    await run("once")
    assert not any("greedy epochs" in x for x in lines)


def test_the_command_line_sends_and_records_the_seeds(scripted_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "plan.jsonl"
    base = [sys.executable, "-m", "evals", "run", "--base-url", scripted_url]
    base += ["--model", "scripted:plan", "--epochs", "2", "--out", str(out)]
    proc = subprocess.run(
        [*base, "--temperature", "0.7", "--seed", "41"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    records = read_records(out)
    assert [(r["epoch"], r["spec"]["temperature"], r["seed"]) for r in records][::6] == [
        (1, 0.7, 41),
        (2, 0.7, 42),
    ]
    assert "greedy epochs" not in proc.stdout
    refused = subprocess.run(
        [*base, "--api", "anthropic", "--seed", "1"], capture_output=True, text=True, env=env
    )
    assert refused.returncode == 1 and "openai shape only" in refused.stderr
