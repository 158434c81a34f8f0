"""A local PostgreSQL for the SQL analyst's tasks: ``python -m evals serve-postgres`` (``make
serve-postgres``) and ``python -m evals stop-postgres`` (``make stop``).

It is Debian's ``postgresql`` (installed with apt-get where missing), started on a free port
of 127.0.0.1 with its data under ``.run/postgres/`` (the project's folder). The server refuses
to run as root, so as root every PostgreSQL program runs as the ``postgres`` user, who owns
that folder.

Connections over TCP authenticate with a password (``scram-sha-256``); only the Unix socket,
inside that folder (mode 0700: its owner and root alone can reach it), is trusted, and it is
how the roles are made and the banks loaded. ``loopbench`` owns the banks;
``loopbench_reader`` may only SELECT, holds none of the server-file roles, and its sessions
default to read-only transactions. The reader's password is generated at each start and kept
in ``.run/postgres/pgpass`` (mode 0600, libpq's passfile format); the URL printed, and kept in
``.run/postgres/url``, names that file (``?passfile=``) and holds no password.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from evals.errors import EvalError
from serve_local.public import free_port

# A folder of the project's (its data, its pid and the reader's password file), where the
# command runs: `make serve-postgres` in the project makes .run/postgres there.
ROOT = Path(".run") / "postgres"
DATABASE = "loopbench"
OWNER = "loopbench"
READER = "loopbench_reader"
SYSTEM_USER = "postgres"


def _bin_dir() -> Path | None:
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3])
    )
    if versions:
        return versions[-1].parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def install() -> Path:
    """The folder of PostgreSQL's programs, installing Debian's ``postgresql`` if missing."""
    found = _bin_dir()
    if found is not None:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    apt = [*sudo, "apt-get", "install", "-y", "postgresql"]
    if subprocess.run(apt, capture_output=True, check=False).returncode != 0:
        subprocess.run([*sudo, "apt-get", "update"], capture_output=True, check=False)
        subprocess.run(apt, capture_output=True, check=False)
    found = _bin_dir()
    if found is None:
        raise EvalError(
            "PostgreSQL is not installed and apt-get could not install it (it needs root or "
            "sudo): install Debian's postgresql package"
        )
    return found


def _as_owner(command: list[str]) -> list[str]:
    """``command`` as the user the server runs as: as root, the postgres user."""
    if os.geteuid() == 0:
        return ["runuser", "-u", SYSTEM_USER, "--", *command]
    return command


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(_as_owner(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EvalError(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout


@dataclass(frozen=True)
class Server:
    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def passfile(self) -> Path:
        return self.root / "pgpass"

    def url(self, role: str = READER) -> str:
        """The reader's URL over TCP: its password is read from the passfile."""
        return f"postgresql://{role}@127.0.0.1:{self.port}/{DATABASE}?passfile={self.passfile}"

    def socket_url(self, role: str, database: str = DATABASE) -> str:
        """Over the Unix socket in the server's folder: only its owner (and root) reach it."""
        return f"postgresql://{role}@/{database}?host={self.root}&port={self.port}"


# Who may connect, and how: written at every start, so a folder made before passwords were
# asked gets them too.
HBA = """# written by python -m evals serve-postgres
local   all   all                  trust
host    all   all   127.0.0.1/32   scram-sha-256
"""


def _state(root: Path) -> dict[str, object] | None:
    path = root / "server.json"
    if not path.exists():
        return None
    try:
        data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise EvalError(f"{path}: not the server's state ({exc.msg}); remove it") from exc
    return data


def running(root: Path = ROOT) -> Server | None:
    """The server started under ``root``, if it is up."""
    state = _state(root)
    if state is None:
        return None
    server = Server(root.resolve(), int(str(state["port"])))
    ready = _bin_dir()
    if ready is None:
        return None
    done = subprocess.run(
        [str(ready / "pg_isready"), "-h", "127.0.0.1", "-p", str(server.port)],
        capture_output=True,
        check=False,
    )
    return server if done.returncode == 0 else None


def start(root: Path = ROOT, port: int | None = None) -> Server:
    """Start (or find running) the server under ``root``; its roles and database exist."""
    if (server := running(root)) is not None:
        return server
    bin_dir = install()
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)  # the trusted socket lies in it
    if os.geteuid() == 0:
        shutil.chown(root, SYSTEM_USER, SYSTEM_USER)
    server = Server(root, port or free_port())
    if not (server.data / "PG_VERSION").exists():
        _run(
            [str(bin_dir / "initdb"), "-D", str(server.data), "-U", SYSTEM_USER,
             "--auth-local=trust", "--auth-host=scram-sha-256", "--no-locale", "-E", "UTF8"],
            "initdb",
        )  # fmt: skip
    hba = server.data / "pg_hba.conf"
    hba.write_text(HBA, encoding="utf-8")
    if os.geteuid() == 0:
        shutil.chown(hba, SYSTEM_USER, SYSTEM_USER)
    options = (
        f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 "
        "-c password_encryption=scram-sha-256"
    )
    _run(
        [str(bin_dir / "pg_ctl"), "-D", str(server.data), "-l", str(root / "server.log"),
         "-o", options, "-w", "-t", "60", "start"],
        f"starting PostgreSQL (its log: {root / 'server.log'})",
    )  # fmt: skip
    (root / "server.json").write_text(json.dumps({"port": server.port}) + "\n")
    _roles(server)
    (root / "url").write_text(server.url() + "\n")
    return server


def _roles(server: Server) -> None:
    import psycopg
    from psycopg import sql

    password = secrets.token_urlsafe(24)
    with psycopg.connect(server.socket_url(SYSTEM_USER, "postgres"), autocommit=True) as conn:
        roles = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles")}
        if OWNER not in roles:
            conn.execute(f"CREATE ROLE {OWNER} LOGIN")
        if READER not in roles:
            conn.execute(f"CREATE ROLE {READER} LOGIN")
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(READER), sql.Literal(password)
            )
        )
        conn.execute(f"ALTER ROLE {READER} SET default_transaction_read_only = on")
        # Task runs share the reader role: its sessions report no query text (a setting only
        # a superuser may change) for another run to read in pg_stat_activity.
        conn.execute(f"ALTER ROLE {READER} SET track_activities = off")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE} OWNER {OWNER}")
    _write_passfile(server, password)
    with psycopg.connect(server.socket_url(SYSTEM_USER), autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f"REVOKE ALL ON DATABASE {DATABASE} FROM PUBLIC")
        conn.execute(f"GRANT CONNECT ON DATABASE {DATABASE} TO {READER}")
        # Nor may one end another's session: a role may signal its own backends by default.
        for signal in ("pg_terminate_backend(integer, bigint)", "pg_cancel_backend(integer)"):
            conn.execute(f"REVOKE EXECUTE ON FUNCTION {signal} FROM PUBLIC")
        conn.execute("REVOKE SELECT ON pg_stat_activity FROM PUBLIC")


def _write_passfile(server: Server, password: str) -> None:
    """The reader's password where libpq reads it (``passfile=``), readable by its owner only
    (libpq ignores a passfile others can read)."""
    line = f"127.0.0.1:{server.port}:{DATABASE}:{READER}:{password}\n"
    server.passfile.unlink(missing_ok=True)
    fd = os.open(server.passfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(line)


def stop(root: Path = ROOT, wait_s: float = 60.0) -> bool:
    """Stop the server under ``root``; False when none was running."""
    state = _state(root)
    bin_dir = _bin_dir()
    if state is None or bin_dir is None or not (root / "data" / "PG_VERSION").exists():
        return False
    done = subprocess.run(
        _as_owner([str(bin_dir / "pg_ctl"), "-D", str((root / "data").resolve()), "-m", "fast",
                   "-w", "-t", str(int(wait_s)), "stop"]),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    (root / "server.json").unlink(missing_ok=True)
    (root / "url").unlink(missing_ok=True)
    (root / "pgpass").unlink(missing_ok=True)
    return done.returncode == 0


def committed_seeds(folder: Path) -> list[int]:
    """The banks of the sql task sets in ``folder``."""
    seeds: set[int] = set()
    for path in sorted(folder.glob("sql-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        seeds |= {t["database"]["seed"] for t in data.get("tasks", []) if t.get("database")}
    return sorted(seeds)
