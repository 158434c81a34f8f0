"""``python -m serve_local``: the OpenAI-shaped server.

python -m serve_local --backend scripted --port 8001
python -m serve_local --backend llama --model qwen2.5-coder-0.5b-instruct --port 8000
python -m serve_local --backend transformers --model smollm2-135m-instruct

Each backend declares its own options (below, a group per backend); an option given to a
backend that does not read it is an error.
"""

from __future__ import annotations

import argparse
import sys

import uvicorn

from serve_local.app import create_app
from serve_local.backends import registry
from serve_local.backends.options import add_options, apply_defaults
from serve_local.errors import StartupError
from serve_local.exactargs import ExactParser
from serve_local.guard import DEFAULT_MAX_BODY_MB, Limits


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line read: the server's own options and the chosen backend's, each at its
    default where not given; an option of another backend is a :class:`StartupError`."""
    options = registry.declared()  # a plugin that fails to load is left out, with a warning
    parser = ExactParser(
        prog="python -m serve_local",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", default=registry.DEFAULT, choices=list(options))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--max-body-mb",
        type=float,
        default=DEFAULT_MAX_BODY_MB,
        help="the largest request body accepted, in MB; a longer one gets 413 before it is read "
        f"(default {DEFAULT_MAX_BODY_MB:g})",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="bound to a loopback address, the server answers only requests whose Host header "
        "is 127.0.0.1, localhost or ::1 (403 otherwise, against DNS rebinding); each "
        "--allow-host adds a name, '*' answers any",
    )
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--name",
        default=None,
        help="the name /health answers with beside its pid (loopbench serve --name gives it)",
    )
    add_options(parser, options)
    args = parser.parse_args(argv)
    return apply_defaults(args, args.backend, options)


def main(argv: list[str] | None = None) -> int:
    try:
        args = arguments(argv)
        backend = registry.build(args)
    except StartupError as exc:
        print(f"serve_local: {exc}", file=sys.stderr, flush=True)
        return 2
    servers: list[uvicorn.Server] = []

    def give_up() -> None:
        servers[0].should_exit = True

    limits = Limits.for_address(args.host, args.allow_host, args.max_body_mb)
    app = create_app(backend, on_load_failure=give_up, limits=limits, name=args.name)
    servers.append(
        uvicorn.Server(
            uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level)
        )
    )
    server = servers[0]
    print(f"serve_local: {backend.name} backend on http://{args.host}:{args.port}/v1", flush=True)
    server.run()
    return 1 if backend.load_error else 0


if __name__ == "__main__":
    sys.exit(main())
