"""llama.cpp's own C++ server (``llama-server``) as a peer: build it, find it, start it.

The sources are the llama.cpp tree vendored inside the llama-cpp-python sdist of the version
installed here, so the peer and our llama backend run the same llama.cpp. The build is cached
under the user's cache (``~/.cache/loopbench/llama-server/<version>-<BUILD>/``), so it survives
``make clean`` and a fresh clone; it takes about 10 minutes on 2 cores the first time.

Both builds, the bindings' (``wheel``) and the server's, are tuned for this machine
(``-march=native``) but leave out llama.cpp's AMX kernels: on some Sapphire Rapids machines and
virtual machines their first matrix product faults (``ldtilecfg``, a segmentation fault in
``ggml_backend_amx_mul_mat``; llama.cpp issue 20824), though the CPU reports AMX. Without them
llama.cpp takes its AVX-512/AVX2 kernels, as on any machine without AMX.

python -m serve_local.llama_server wheel     build the bindings' wheel unless cached; print it
python -m serve_local.llama_server build     build unless cached; print the binary's path
python -m serve_local.llama_server path      print the binary's path (exit 1 when not built)
python -m serve_local.llama_server args ...  the command line that serves a model (see --help)
python -m serve_local.llama_server serve ... start it in the background (serve_local.daemon)
"""

from __future__ import annotations

import importlib.metadata
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from serve_local import daemon
from serve_local.exactargs import ExactParser
from serve_local.models import cache_root, resolve

PACKAGE = "llama_cpp_python"
# The bindings `make` installs (their wheel is built here, see wheel()); pyproject's llama extra
# accepts any 0.3 release for a user who installs their own.
BINDINGS_VERSION = "0.3.36"
# Compiler flags added to every llama.cpp build here: no AMX kernels (see the module's text).
# An explicit -mno-* holds whatever -march=native turns on.
CPU_FLAGS = ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16")
# Names the builds made with these flags, so a cached build made without them is not taken.
BUILD = "noamx"


def build_env() -> dict[str, str]:
    """The environment for a llama.cpp build: CPU_FLAGS before the user's own CFLAGS and
    CXXFLAGS (CMake reads both when it first configures; CMAKE_ARGS, e.g. for CUDA, pass on)."""
    env = dict(os.environ)
    for name in ("CFLAGS", "CXXFLAGS"):
        env[name] = " ".join([*CPU_FLAGS, env.get(name, "")]).strip()
    return env


def installed_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(
            "llama-cpp-python is not installed; `make peer-llama-server` installs it first"
        ) from None


def build_dir(version: str | None = None) -> Path:
    return cache_root() / "llama-server" / f"{version or installed_version()}-{BUILD}"


def wheel_dir() -> Path:
    return cache_root() / "wheels" / f"llama-cpp-python-{BINDINGS_VERSION}-{BUILD}"


def cached_wheel() -> Path | None:
    """The wheel ``wheel()`` built earlier, if any."""
    return next(iter(sorted(wheel_dir().glob("llama_cpp_python-*.whl"))), None)


def _keep(built: Path, target: Path) -> None:
    """Copy a finished build into the cache under its final name in one step, so that only a
    finished build is ever found there."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    shutil.copy2(built, partial)
    partial.replace(target)


def wheel() -> Path:
    """The bindings' wheel for this machine, compiled from the sdist once (several minutes on 2
    cores) with CPU_FLAGS and kept under the user's cache. pip's own wheel cache is not used:
    it keys a built wheel by the sdist alone, so a wheel built without these flags (an older
    checkout's) would be taken again."""
    found = cached_wheel()
    if found:
        return found
    with tempfile.TemporaryDirectory(prefix="llama-wheel-") as tmp:
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--disable-pip-version-check",
                "--quiet",
                "--no-deps",
                "--no-cache-dir",
                "--no-binary",
                "llama-cpp-python",
                "--wheel-dir",
                tmp,
                f"llama-cpp-python=={BINDINGS_VERSION}",
            ],
            env=build_env(),
        )
        built = next(Path(tmp).glob("llama_cpp_python-*.whl"))
        _keep(built, wheel_dir() / built.name)
    return wheel_dir() / built.name


def binary(version: str | None = None) -> Path:
    return build_dir(version) / "llama-server"


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """A build step, its output on stderr (stdout carries only the path a command prints)."""
    print("+", shlex.join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=cwd, check=True, env=env, stdout=sys.stderr)


def build(jobs: int | None = None) -> Path:
    """Download the sdist of the installed llama-cpp-python and build its llama-server."""
    version = installed_version()
    target = binary(version)
    if target.exists():
        return target
    jobs = jobs or os.cpu_count() or 2
    with tempfile.TemporaryDirectory(prefix="llama-server-") as tmp:
        work = Path(tmp)
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                str(work),
                f"llama-cpp-python=={version}",
            ]
        )
        sdist = next(work.glob("*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(work, filter="data")
        source = next(work.glob("*/vendor/llama.cpp"))
        out = work / "build"
        # Static, CPU only, tuned for this machine as the bindings' wheel is (the same CPU_FLAGS);
        # no curl (nothing here downloads a model), no tests or examples beyond the server.
        _run(
            [
                "cmake",
                "-S",
                str(source),
                "-B",
                str(out),
                *(["-G", "Ninja"] if shutil.which("ninja") else []),
                "-DCMAKE_BUILD_TYPE=Release",
                "-DBUILD_SHARED_LIBS=OFF",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_OPENSSL=OFF",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DLLAMA_BUILD_SERVER=ON",
            ],
            env=build_env(),
        )
        _run(["cmake", "--build", str(out), "--target", "llama-server", "-j", str(jobs)])
        _keep(out / "bin" / "llama-server", target)
    return target


class NotBuilt(RuntimeError):
    """llama-server is not built here; the message says how to build it."""


def command(
    model: str | None,
    port: int | None,
    *,
    threads: int | None = None,
    slots: int = 1,
    ctx_size: int = 4096,
    host: str = "127.0.0.1",
) -> list[str]:
    """The command line that serves ``model`` (a SPEC, as for serve_local) the way ours does:
    the GGUF's own chat template through Jinja, greedy unless a request says otherwise,
    ``slots`` requests decoded together, each with ``ctx_size`` tokens of context. With no
    ``port``, the caller adds ``--port``."""
    exe = binary()
    if not exe.exists():
        raise NotBuilt(
            f"llama.cpp's llama-server is not built ({exe}); run `make peer-llama-server` "
            "first (about 10 minutes on 2 cores, then cached)"
        )
    resolved = resolve(model)
    if resolved.kind != "gguf":
        raise SystemExit(f"llama-server serves GGUF files; {resolved.path} is not one")
    cmd = [
        str(exe),
        "--model",
        str(resolved.path),
        "--alias",
        resolved.name,
        "--host",
        host,
        *(["--port", str(port)] if port is not None else []),
        "--jinja",
        "--parallel",
        str(slots),
        # llama-server splits its context among the slots; each gets what ours gives a request
        "--ctx-size",
        str(ctx_size * slots),
        "--seed",
        "0",
        "--temp",
        "0",
        "--no-webui",
    ]
    if threads:
        cmd += ["--threads", str(threads), "--threads-batch", str(threads)]
    return cmd


def main(argv: list[str] | None = None) -> int:
    parser = ExactParser(prog="python -m serve_local.llama_server")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "wheel", help="build the llama-cpp-python wheel `make` installs unless it is cached"
    )
    build_cmd = commands.add_parser("build", help="build llama-server unless it is cached")
    build_cmd.add_argument("--jobs", type=int, default=None)
    commands.add_parser("path", help="the binary's path; exit 1 when it is not built")
    for name, text in (
        ("args", "the command line that serves a model"),
        ("serve", "serve a model in the background until `make stop`"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--model", default=None, help="a SPEC as for serve_local (a GGUF)")
        sub.add_argument("--port", type=int, default=8080)
        sub.add_argument("--threads", type=int, default=None)
        sub.add_argument("--slots", type=int, default=1, help="requests decoded together")
        sub.add_argument("--name", default="llama-server", help="the daemon's name (serve)")
    args = parser.parse_args(argv)
    if args.command == "wheel":
        if cached_wheel() is None:
            print(
                f"compiling llama-cpp-python {BINDINGS_VERSION} for this machine (several "
                "minutes on 2 cores; cached afterwards)",
                file=sys.stderr,
                flush=True,
            )
        print(wheel())
        return 0
    if args.command == "build":
        exe = binary()
        if exe.exists():
            print(f"llama-server {installed_version()}: {exe} (cached)")
            return 0
        print(
            f"building llama-server from llama-cpp-python {installed_version()}'s llama.cpp "
            "sources (about 10 minutes on 2 cores; cached afterwards)",
            flush=True,
        )
        print(f"llama-server {installed_version()}: {build(args.jobs)}")
        return 0
    if args.command == "path":
        exe = binary()
        print(exe)
        return 0 if exe.exists() else 1
    try:
        cmd = command(args.model, args.port, threads=args.threads, slots=args.slots)
    except NotBuilt as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.command == "args":
        print(shlex.join(cmd))
        return 0
    return daemon.start(args.name, args.port, cmd, timeout_s=300, command=True)


if __name__ == "__main__":
    sys.exit(main())
