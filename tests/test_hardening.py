"""Inputs that used to cost far more than their size, and a daemon that trusted any answer on
its port: each through the path a user takes (``check-tasks``, ``loopbench serve``/``stop``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evals.cli import main as evals_main
from evals.tasks import load_tasks
from evals.tasks.files import TASK_FILE_LIMIT, TaskFileError
from serve_local.process import free_port

ROOT = Path(__file__).resolve().parent.parent


def _nested(depth: int, aliases: bool) -> str:
    """A task file whose ``after`` arguments nest ``depth`` lists of ten: with aliases, each
    level names the one before ten times in a few bytes; without, the same shape written out
    at depth 3 (the size a file without aliases would need for more is the point)."""
    lines = ["name: bomb", "tasks:", "  - id: t1", "    question: How many files?",
             "    checks:", "      - kind: after", "        tool: list_files",
             "        arguments:"]  # fmt: skip
    if aliases:
        lines.append("          l0: &l0 [x, x, x, x, x, x, x, x, x, x]")
        for level in range(1, depth):
            inner = ", ".join([f"*l{level - 1}"] * 10)
            lines.append(f"          l{level}: &l{level} [{inner}]")
    else:
        value = "x"
        for _ in range(3):
            value = "[" + ", ".join([value] * 10) + "]"
        lines.append(f"          l0: {value}")
    lines.append("        result_contains: [x]")
    return "\n".join(lines) + "\n"


def _cost(path: Path) -> tuple[str, int]:
    """What loading ``path`` says, and the peak of Python memory it took."""
    tracemalloc.start()
    try:
        load_tasks(path)
        said = "OK"
    except TaskFileError as exc:
        said = str(exc)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return said, peak


def test_a_task_file_with_aliases_is_refused_at_its_line_before_anything_walks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 700-byte file of seven alias levels stands for ten million strings: it used to pass
    ``check-tasks`` and cost seconds and hundreds of MB in every record's checks hash. Now it
    is refused where the first alias is, at the cost of reading the file."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_nested(7, aliases=True))
    plain = tmp_path / "plain.yaml"
    plain.write_text(_nested(3, aliases=False))
    said, peak = _cost(bomb)
    assert said.startswith(f"{bomb}, line 10: not valid YAML: aliases (*name) are not allowed")
    _, plain_peak = _cost(plain)
    # The refusal costs what reading a file of its size costs: well under the expansion's
    # 10**7 strings (hundreds of MB), whatever the machine's speed.
    assert peak < max(4 * plain_peak, 2 << 20), (peak, plain_peak)
    assert evals_main(["check-tasks", str(bomb)]) == 1
    assert "line 10: not valid YAML: aliases" in capsys.readouterr().out


def test_a_task_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(TASK_FILE_LIMIT + 1)  # sparse: nothing of it is written, or read
    with pytest.raises(TaskFileError, match=r"big.json: 33,554,433 bytes; a task file may hold"):
        load_tasks(big)


def _daemon(run_dir: Path, *args: str, cwd: Path = ROOT) -> subprocess.Popen[str]:
    """The daemon with its pid files under ``run_dir``, as a user's state folder holds them
    by default (no LOOPBENCH_RUN_DIR: ``XDG_STATE_HOME`` is the user's state folder)."""
    env = {k: v for k, v in os.environ.items() if k != "LOOPBENCH_RUN_DIR"}
    return subprocess.Popen(
        [sys.executable, "-m", "serve_local.daemon", *args],
        env={**env, "XDG_STATE_HOME": str(run_dir), "PYTHONPATH": str(ROOT)},
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "run"
    yield folder
    _daemon(folder, "stop").communicate(timeout=60)


def test_two_servers_started_at_once_on_one_port_one_listens_the_other_is_told(
    run_dir: Path,
) -> None:
    """Both used to print "listening" (the second describing the first's model): the daemon
    trusted any 200 on /health. Now it accepts only the process it started, by the pid and
    name /health answers with, and the other start says the port is in use."""
    port = free_port()
    starts = [
        _daemon(run_dir, "start", name, str(port), "--", "--backend", "scripted")
        for name in ("first", "second")
    ]
    said = [s.communicate(timeout=120)[0] for s in starts]
    codes = sorted(s.returncode for s in starts)
    assert codes == [0, 1], said
    winner = said[[s.returncode for s in starts].index(0)]
    loser = said[[s.returncode for s in starts].index(1)]
    assert winner.count("listening on") == 1 and "listening on" not in loser
    assert f"port {port} is in use by another process" in loser
    health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
    assert health["name"] in ("first", "second") and health["name"] in winner
    assert str(health["pid"]) in winner
    # A third, started once the first listens, is told the same at once.
    third = _daemon(run_dir, "start", "third", str(port), "--", "--backend", "scripted")
    assert third.communicate(timeout=60)[0].startswith(f"third: port {port} is in use")


def test_stop_finds_the_server_from_any_folder(run_dir: Path, tmp_path: Path) -> None:
    """The pid file used to live in .run under the folder serve ran in: stop from elsewhere
    found nothing and left the server up. Now it lives in the user's own run folder."""
    port = free_port()
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    started = _daemon(run_dir, "start", "local", str(port), "--", "--backend", "scripted",
                      cwd=here).communicate(timeout=120)[0]  # fmt: skip
    assert "listening on" in started, started
    stopped = _daemon(run_dir, "stop", cwd=there).communicate(timeout=60)[0]
    assert "local: stopped" in stopped
    assert not (here / ".run").exists() and (run_dir / "loopbench" / "local.log").exists()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)


def test_stop_still_finds_a_server_started_before_the_run_folder_moved(
    run_dir: Path, tmp_path: Path
) -> None:
    """Pid files used to be written under ./.run: a server started so is stopped by a
    `stop` run in that folder after the move."""
    port = free_port()
    here = tmp_path / "project"
    here.mkdir()
    started = subprocess.run(
        [sys.executable, "-m", "serve_local.daemon", "start", "old", str(port), "--",
         "--backend", "scripted"],
        env={**os.environ, "LOOPBENCH_RUN_DIR": str(here / ".run"), "PYTHONPATH": str(ROOT)},
        cwd=here, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "listening on" in started.stdout, started.stdout + started.stderr
    stopped = _daemon(run_dir, "stop", cwd=here).communicate(timeout=60)[0]
    assert "old: stopped" in stopped
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)


def test_the_default_run_folder_is_the_users_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from serve_local.daemon import run_dir

    monkeypatch.delenv("LOOPBENCH_RUN_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "/state/of/someone")
    assert run_dir() == Path("/state/of/someone/loopbench")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert run_dir() == Path.home() / ".local" / "state" / "loopbench"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_stop_never_signals_another_users_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shared run folder whose pid file names another user's process (with its own start
    time, so it is the process that file's writer started): stop used to signal it (as root,
    kill it; as anyone else, die on PermissionError). Now it is left alone; and a pid file that
    another user wrote is not read at all."""
    from serve_local import daemon

    monkeypatch.setattr(daemon, "RUN_DIR", tmp_path)
    theirs = subprocess.Popen(["sleep", "600"], user=65534, start_new_session=True)
    try:
        started, command = daemon.identity(theirs.pid) or ("", "")
        pid_file = tmp_path / "local.pid"
        pid_file.write_text(json.dumps(
            {"pid": theirs.pid, "port": 8000, "started": started, "command": command}
        ))  # fmt: skip
        assert daemon.stop("local") is False
        assert theirs.poll() is None, "another user's process was signalled"
        assert "another user's process" in capsys.readouterr().out
        os.chown(pid_file, 65534, 65534)
        assert daemon.stop("local") is False
        assert theirs.poll() is None
        assert "belongs to another user" in capsys.readouterr().out
    finally:
        theirs.kill()
        theirs.wait()
