"""Start, wait for and stop a background server by pid file (used by the Makefile).

python -m serve_local.daemon start NAME PORT -- ARGS...   start unless already up
python -m serve_local.daemon start NAME PORT --exec -- COMMAND...   another server (llama-server)
python -m serve_local.daemon stop [NAME...]                stop what was started
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

RUN_DIR = Path(os.environ.get("LOOPBENCH_RUN_DIR", ".run"))


def _pid_file(name: str) -> Path:
    return RUN_DIR / f"{name}.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def identity(pid: int) -> tuple[str, str] | None:
    """(start time, command line) of process ``pid``, as the kernel gives them; None if it
    is gone. The start time (clock ticks since boot) tells a process from a later one that
    reuses its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None if not _alive(pid) else _ps_identity(pid)
    started = stat.rsplit(")", 1)[1].split()[19]  # field 22; the name may hold spaces
    return started, command.replace(b"\0", b" ").decode(errors="replace").strip()


def _ps_identity(pid: int) -> tuple[str, str] | None:
    """Where there is no /proc: ps's start time and command line."""
    done = subprocess.run(
        ["ps", "-p", str(pid), "-o", "lstart=", "-o", "command="],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    line = done.stdout.strip()
    return (line[:24], line[24:].strip()) if done.returncode == 0 and line else None


def running(name: str) -> tuple[int, int] | None:
    """(pid, port) of the server started under ``name``, if it is still alive and is still
    the process that was started (not another that took its pid since)."""
    try:
        saved = json.loads(_pid_file(name).read_text())
        pid, port = int(saved["pid"]), int(saved["port"])
        launched = (str(saved["started"]), str(saved["command"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    found = identity(pid)
    if found is None:
        return None
    # The start time tells the process apart from a later one that took its pid. The command
    # line does not: the pid file may be written before the child has exec'd the server, and
    # then names the launcher's command line.
    if found[0] != launched[0]:
        print(
            f"{name}: {_pid_file(name)} names pid {pid}, which is now another process "
            f"({found[1][:80]!r}); it is left alone and the stale file removed"
        )
        _pid_file(name).unlink(missing_ok=True)
        return None
    return pid, port


def health(port: int, host: str = "127.0.0.1") -> int | None:
    """The status code of ``/health``, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


def describe_model(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as r:
            models = json.load(r)["data"]
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return "model: unknown (/v1/models did not answer)"
    first = models[0]
    if "backend" not in first:
        return f"model: {first.get('id')}  served by: {first.get('owned_by', 'unknown')}"
    if first.get("backend") == "scripted":
        return f"models: {len(models)} scripted scenarios (model=scripted:<name>)"
    return f"model: {first['id']}  backend: {first.get('backend')}  sha256: {first.get('sha256')}"


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def start(
    name: str, port: int, server_args: list[str], timeout_s: float, command: bool = False
) -> int:
    """Start ``python -m serve_local --port PORT ARGS`` (or, with ``command``, ARGS as they
    are) in the background, and wait until its /health answers 200."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    log = RUN_DIR / f"{name}.log"
    current = running(name)
    if current is not None:
        pid, current_port = current
        print(f"{name}: already running (pid {pid}) on http://127.0.0.1:{current_port}/v1")
        if current_port != port:
            print(
                f"{name}: not starting another on port {port}; give the new one its own name "
                f"(NAME=...) or `make stop NAME={name}` first"
            )
            return 1
        return 0
    if health(port) is not None:
        print(f"{name}: port {port} is already taken by another process; pick another PORT=")
        return 1
    cmd = (
        server_args
        if command
        else [sys.executable, "-m", "serve_local", "--port", str(port), *server_args]
    )
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    # What the pid file names: this process, by its start time and command line.
    started, command_line = identity(proc.pid) or ("", "")
    record = {"pid": proc.pid, "port": port, "started": started, "command": command_line}
    _pid_file(name).write_text(json.dumps(record) + "\n")
    deadline = time.monotonic() + timeout_s
    last_note = time.monotonic()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _pid_file(name).unlink(missing_ok=True)
            print(f"{name}: the server exited with code {proc.returncode}; last lines of {log}:")
            print(_tail(log))
            return 1
        if health(port) == 200:
            print(f"{name}: listening on http://127.0.0.1:{port}/v1 (pid {proc.pid}, log {log})")
            print(describe_model(port))
            return 0
        if time.monotonic() - last_note > 15:
            print(f"{name}: still starting (see {log})", flush=True)
            last_note = time.monotonic()
        time.sleep(0.2)
    print(f"{name}: /health did not answer within {timeout_s:.0f} s; stopping it. See {log}.")
    stop(name)
    return 1


def stop(name: str) -> bool:
    """Stop the server started under ``name``: only the process that was launched, checked
    by its start time and command line before any signal is sent."""
    current = running(name)
    if current is None:
        _pid_file(name).unlink(missing_ok=True)  # stale: the process is gone
        return False
    pid = current[0]
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        os.killpg(pid, signal.SIGKILL)
    _pid_file(name).unlink(missing_ok=True)
    print(f"{name}: stopped (pid {pid})")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_local.daemon")
    commands = parser.add_subparsers(dest="command", required=True)
    start_cmd = commands.add_parser("start")
    start_cmd.add_argument("name")
    start_cmd.add_argument("port", type=int)
    start_cmd.add_argument("--timeout", type=float, default=600.0)
    start_cmd.add_argument(
        "--exec", action="store_true", help="what follows -- is the whole command to run"
    )
    stop_cmd = commands.add_parser("stop")
    stop_cmd.add_argument("names", nargs="*")
    argv = sys.argv[1:] if argv is None else argv
    # Everything after "--" belongs to the server, not to this command.
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    if args.command == "start":
        return start(args.name, args.port, argv[split + 1 :], args.timeout, args.exec)
    names = args.names or [p.stem for p in RUN_DIR.glob("*.pid")]
    stopped = [n for n in names if stop(n)]
    if not stopped:
        print("nothing to stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
