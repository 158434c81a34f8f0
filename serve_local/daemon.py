"""Start, wait for and stop a background server by pid file (used by the Makefile).

Pid files and logs live in one folder per user (``LOOPBENCH_RUN_DIR``, else the user's state
folder), so ``stop`` finds a server from any folder and never reads, or signals, another
user's. A server is accepted as started only when the process started answers: ours says its
pid and name on ``/health``; another server (``--exec``) must hold the port itself.

python -m serve_local.daemon start NAME PORT -- ARGS...   start unless already up
python -m serve_local.daemon start NAME PORT --exec -- COMMAND...   another server (llama-server)
python -m serve_local.daemon stop [NAME...]                stop what was started
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from serve_local.exactargs import ExactParser


def run_dir() -> Path:
    """Where pid files and logs live: ``LOOPBENCH_RUN_DIR``, or the user's own state folder
    (``XDG_STATE_HOME``, default ``~/.local/state``) under ``loopbench``."""
    given = os.environ.get("LOOPBENCH_RUN_DIR")
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME")
    if not state:
        try:
            state = str(Path.home() / ".local" / "state")
        except RuntimeError:  # no home to be found: a folder of this user's own
            return Path(tempfile.gettempdir()) / f"loopbench-{os.getuid()}"
    return Path(state) / "loopbench"


# Where pid files lived before they moved to the user's run folder: `stop` still looks there
# (in the folder it runs in), so a server started before the move is stopped after it.
LEGACY_RUN_DIR = Path(".run")


RUN_DIR = run_dir()


def _pid_file(name: str, folder: Path | None = None) -> Path:
    """The pid file of ``name`` in ``folder`` (default: the run folder)."""
    return (folder or RUN_DIR) / f"{name}.pid"


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


def _own(path: Path) -> bool:
    """Whether ``path`` (a pid file, a process's /proc folder) belongs to this user."""
    try:
        return path.stat().st_uid == os.getuid()
    except OSError:
        return False


def running(name: str, folder: Path | None = None) -> tuple[int, int] | None:
    """(pid, port) of the server started under ``name``, if it is still alive and is still
    the process that was started (not another that took its pid since), and this user's."""
    pid_file = _pid_file(name, folder)
    if pid_file.exists() and not _own(pid_file):
        print(f"{name}: {pid_file} belongs to another user; it is left alone")
        return None
    try:
        saved = json.loads(pid_file.read_text())
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
            f"{name}: {pid_file} names pid {pid}, which is now another process "
            f"({found[1][:80]!r}); it is left alone and the stale file removed"
        )
        pid_file.unlink(missing_ok=True)
        return None
    if Path("/proc").is_dir() and not _own(Path(f"/proc/{pid}")):
        print(f"{name}: pid {pid} is another user's process; it is left alone")
        return None
    return pid, port


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``port`` now (nothing else does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _listening(port: int) -> set[str]:
    """The socket inodes listening on ``port`` (Linux's /proc/net tables)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cells = row.split()
            if len(cells) > 9 and cells[3] == "0A" and int(cells[1].rsplit(":", 1)[1], 16) == port:
                found.add(f"socket:[{cells[9]}]")
    return found


def holds_port(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` listens on ``port``; None where /proc cannot say."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    sockets = _listening(port)
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                return True
        except OSError:
            continue
    return False


def _health_body(port: int) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            body = json.load(r)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def answers_as(pid: int, name: str, port: int, ours: bool) -> bool:
    """Whether the server answering on ``port`` is process ``pid``, the one started as
    ``name``: ours says so on /health; another server must hold the port itself."""
    if ours:
        body = _health_body(port)
        return body is not None and body.get("pid") == pid and body.get("name") == name
    return health(port) == 200 and holds_port(pid, port) is not False


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
    if not port_free(port):
        print(f"{name}: port {port} is in use by another process; pick another PORT=")
        return 1
    cmd = (
        server_args
        if command
        else [sys.executable, "-m", "serve_local", "--port", str(port), "--name", name,
              *server_args]
    )  # fmt: skip
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
            if not port_free(port):  # another server took the port while this one started
                print(f"{name}: port {port} is in use by another process; pick another PORT=")
                return 1
            print(f"{name}: the server exited with code {proc.returncode}; last lines of {log}:")
            print(_tail(log))
            return 1
        if answers_as(proc.pid, name, port, ours=not command):
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


def _gone(name: str, folder: Path | None = None) -> bool:
    """Whether the process a pid file names is gone (or the file names none)."""
    try:
        pid = int(json.loads(_pid_file(name, folder).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return True
    return identity(pid) is None


def _signal(pid: int, signum: int) -> None:
    """``signum`` to the server's process group (it leads one: started in a session of its
    own), or to the process alone where it leads none."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError):
        if group == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)


def stop(name: str, folder: Path | None = None) -> bool:
    """Stop the server started under ``name``: only the process that was launched, checked
    by its start time and command line before any signal is sent."""
    pid_file = _pid_file(name, folder)
    current = running(name, folder)
    if current is None:
        if _own(pid_file) and _gone(name, folder):
            pid_file.unlink(missing_ok=True)  # stale: the process is gone
        return False
    pid = current[0]
    try:
        _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    except PermissionError:
        print(f"{name}: pid {pid} may not be signalled by this user; it is left alone")
        return False
    pid_file.unlink(missing_ok=True)
    print(f"{name}: stopped (pid {pid})")
    return True


def _stop_legacy(names: list[str]) -> list[str]:
    """The servers whose pid files are in the old run folder (``.run`` here), stopped by the
    same rules: a server started before the run folder moved."""
    if not LEGACY_RUN_DIR.is_dir() or LEGACY_RUN_DIR.resolve() == RUN_DIR.resolve():
        return []
    found = names or [p.stem for p in LEGACY_RUN_DIR.glob("*.pid")]
    return [n for n in found if stop(n, LEGACY_RUN_DIR)]


def main(argv: list[str] | None = None) -> int:
    parser = ExactParser(prog="python -m serve_local.daemon")
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
    stopped += _stop_legacy(args.names)
    if not stopped:
        print("nothing to stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
