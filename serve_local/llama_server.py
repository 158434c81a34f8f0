"""llama.cpp's own C++ server (``llama-server``) as a peer: build it, find it, start it.

The sources are the llama.cpp tree vendored inside the llama-cpp-python sdist of the version
installed here, so the peer and our llama backend run the same llama.cpp. The build is cached
under the user's cache (``~/.cache/loopbench/llama-server/<version>/``), so it survives
``make clean`` and a fresh clone; it takes about 10 minutes on 2 cores the first time.

python -m serve_local.llama_server build     build unless cached; print the binary's path
python -m serve_local.llama_server path      print the binary's path (exit 1 when not built)
python -m serve_local.llama_server args ...  the command line that serves a model (see --help)
python -m serve_local.llama_server serve ... start it in the background (serve_local.daemon)
"""

from __future__ import annotations

import argparse
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
from serve_local.models import cache_root, resolve

PACKAGE = "llama_cpp_python"


def installed_version() -> str:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(
            "llama-cpp-python is not installed; `make peer-llama-server` installs it first"
        ) from None


def build_dir(version: str | None = None) -> Path:
    return cache_root() / "llama-server" / (version or installed_version())


def binary(version: str | None = None) -> Path:
    return build_dir(version) / "llama-server"


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    print("+", shlex.join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


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
        # Static, CPU only, tuned for this machine as pip's build of the bindings is; no curl
        # (nothing here downloads a model), no tests or examples beyond the server.
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
            ]
        )
        _run(["cmake", "--build", str(out), "--target", "llama-server", "-j", str(jobs)])
        built = out / "bin" / "llama-server"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copy2(built, partial)
        partial.replace(target)  # only a finished build is ever found
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
    parser = argparse.ArgumentParser(prog="python -m serve_local.llama_server")
    commands = parser.add_subparsers(dest="command", required=True)
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
