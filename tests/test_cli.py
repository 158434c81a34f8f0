"""The command line, as a user runs it: real processes, real servers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from serve_local.process import free_port
from tests.helpers import run_harness, run_make


def harness(*args: str, base_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_harness(*args, url=base_url, cwd=cwd)


def test_run_scenario_plan_prints_the_chapter_line(scripted_url: str, tmp_path: Path) -> None:
    done = harness("run", "--scenario", "plan", base_url=scripted_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, answer, per_turn, run_id = done.stdout.splitlines()
    assert run_id.startswith("   run id: ")
    m = re.match(
        r"plan, cap 20\s+turns=3  tools=2  in=(\d+)  out=(\d+)  cost=\$(\d+\.\d{6})  ms=\d+  "
        r"status=completed$",
        first,
    )
    assert m, first
    tokens_in, tokens_out, cost = int(m[1]), int(m[2]), float(m[3])
    assert cost == round(tokens_in * 2e-6 + tokens_out * 12e-6, 6)
    assert (
        answer == '   answer: "errors.log mentions a timeout: worker 7 timed out after 30000 ms."'
    )
    counts = [int(x) for x in per_turn.split(":")[1].split(",")]
    assert len(counts) == 3 and counts == sorted(set(counts)) and sum(counts) == tokens_in
    assert (tmp_path / "runs").is_dir()


def test_run_json_prints_one_object(scripted_url: str, tmp_path: Path) -> None:
    done = harness(
        "run",
        "--scenario",
        "runaway",
        "--max-turns",
        "4",
        "--json",
        base_url=scripted_url,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for key in [
        "run_id",
        "status",
        "turns",
        "tool_runs",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "wall_ms",
        "answer",
        "per_turn_prompt_tokens",
    ]:
        assert key in result
    assert (result["status"], result["turns"], result["answer"]) == ("max_turns_exceeded", 4, None)


def test_run_task_with_model(scripted_url: str, tmp_path: Path) -> None:
    done = harness(
        "run",
        "--model",
        "scripted:oracle",
        "--task",
        "How many files are there?",
        "--json",
        base_url=scripted_url,
        cwd=tmp_path,
    )
    assert json.loads(done.stdout)["answer"] == "There are 3 files."


def test_server_down_is_a_clear_failure(tmp_path: Path) -> None:
    done = harness("run", "--scenario", "plan", base_url="http://127.0.0.1:9/v1", cwd=tmp_path)
    assert done.returncode == 1
    assert "status=failed" in done.stdout
    assert "http://127.0.0.1:9/v1" in done.stdout and "make serve-local" in done.stdout


def test_make_serve_scripted_then_run_then_stop(tmp_path: Path) -> None:
    port = free_port()

    def make(*args: str) -> subprocess.CompletedProcess[str]:
        return run_make(*args, run_dir=tmp_path / "run")

    started = make("serve-scripted", f"SCRIPTED_PORT={port}")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"http://127.0.0.1:{port}/v1" in started.stdout
        again = make("serve-scripted", f"SCRIPTED_PORT={port}")
        assert "already running" in again.stdout
        done = harness(
            "run", "--scenario", "plan", base_url=f"http://127.0.0.1:{port}/v1", cwd=tmp_path
        )
        assert "turns=3  tools=2" in done.stdout and "status=completed" in done.stdout
    finally:
        stopped = make("stop")
    assert "stopped" in stopped.stdout
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)


def test_make_serve_local_with_the_small_packaged_model(tmp_path: Path) -> None:
    """The user's path: make serve-local, a chat request, make stop (SmolLM2 for speed)."""
    port = free_port()

    def make(*args: str) -> subprocess.CompletedProcess[str]:
        return run_make(*args, run_dir=tmp_path / "run")

    started = make("serve-local", f"PORT={port}", "MODEL=smollm2-135m-instruct", "THREADS=2")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "model: smollm2-135m-instruct  backend: llama  sha256: " in started.stdout
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            timeout=120,
            json={"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
        )
        assert reply.status_code == 200 and reply.json()["model"] == "smollm2-135m-instruct"
    finally:
        make("stop")


def test_named_servers_run_side_by_side(tmp_path: Path) -> None:
    """What `make serve-local NAME=... PORT=...` runs: one daemon per name, each its own port."""
    run_dir = tmp_path / "run"
    first, second = free_port(), free_port()
    while second == first:
        second = free_port()

    def daemon(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "serve_local.daemon", *args],
            env={**os.environ, "LOOPBENCH_RUN_DIR": str(run_dir)},
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        for name, port in (("local", first), ("second", second)):
            started = daemon("start", name, str(port), "--", "--backend", "scripted")
            assert started.returncode == 0, started.stdout + started.stderr
        for port in (first, second):
            assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
        stopped = run_make("stop", "NAME=second", run_dir=run_dir)
        assert "second: stopped" in stopped.stdout and "local: stopped" not in stopped.stdout
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{second}/health", timeout=2)
        assert httpx.get(f"http://127.0.0.1:{first}/health", timeout=5).status_code == 200
    finally:
        run_make("stop", run_dir=run_dir)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{first}/health", timeout=2)
    planned = run_make("-n", "serve-local", "NAME=second", "PORT=8002", run_dir=run_dir)
    assert "loopbench serve --name second --port 8002 " in planned.stdout


# A launcher that becomes `sleep 600` once told to (a line on its stdin).
EXEC_ON_LINE = "import os, sys; sys.stdin.readline(); os.execvp('sleep', ['sleep', '600'])"


def test_the_server_is_known_by_its_start_time_though_it_execd_after_the_pid_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pid file is written right after the launch, which may be before the child has
    exec'd the server: it then names the launcher's command line. The server is still the
    process started (same pid, same start time): stop finds it, and the file stays until then."""
    from serve_local import daemon

    monkeypatch.setattr(daemon, "RUN_DIR", tmp_path)
    server = subprocess.Popen(
        [sys.executable, "-c", EXEC_ON_LINE],
        stdin=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        before = daemon.identity(server.pid)
        assert before is not None and not before[1].startswith("sleep")
        (tmp_path / "local.pid").write_text(json.dumps(
            {"pid": server.pid, "port": 8000, "started": before[0], "command": before[1]}
        ))  # fmt: skip
        assert server.stdin is not None
        server.stdin.write(b"go\n")
        server.stdin.flush()
        while (now := daemon.identity(server.pid)) is not None and not now[1].startswith("sleep"):
            time.sleep(0.01)  # until the exec shows in /proc
        assert daemon.running("local") == (server.pid, 8000)
        reaped = threading.Thread(target=server.wait)  # as the server's own parent would
        reaped.start()
        assert daemon.stop("local") is True
        reaped.join(timeout=10)
        assert server.returncode is not None
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize("form", ["old", "another start"])
def test_make_stop_leaves_alone_a_process_that_reused_the_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    """The pid file names a process that is not the server that was started (its pid reused):
    stop sends it nothing, and drops the stale file."""
    from serve_local import daemon

    monkeypatch.setattr(daemon, "RUN_DIR", tmp_path)
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        _, command = daemon.identity(bystander.pid) or ("", "")
        saved = {
            "old": f"{bystander.pid} 8000\n",
            "another start": json.dumps({"pid": bystander.pid, "port": 8000,
                                         "started": "1", "command": command}),
        }[form]  # fmt: skip
        (tmp_path / "local.pid").write_text(saved)
        assert daemon.stop("local") is False
        assert bystander.poll() is None, "an unrelated process was signalled"
        assert not (tmp_path / "local.pid").exists()
        if form != "old":
            assert "now another process" in capsys.readouterr().out
    finally:
        bystander.kill()
        bystander.wait()
