"""``python -m serve_local --backend scripted --port 8001``."""

from __future__ import annotations

import argparse
import sys

import uvicorn

from serve_local.app import create_app
from serve_local.backends.base import Backend


def build_backend(args: argparse.Namespace) -> Backend:
    if args.backend == "scripted":
        from serve_local.backends.scripted import ScriptedBackend

        return ScriptedBackend(latency_ms=args.latency_ms)
    raise SystemExit(
        f"serve_local: backend {args.backend!r} is not available in this version; "
        "use --backend scripted."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_local", description=__doc__)
    parser.add_argument(
        "--backend", default="scripted", choices=["scripted", "llama", "transformers"]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="scripted: delay before each reply"
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    app = create_app(build_backend(args))
    print(f"serve_local: {args.backend} backend on http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
