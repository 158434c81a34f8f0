"""``python -m serve_local``: the OpenAI-shaped server.

python -m serve_local --backend scripted --port 8001
python -m serve_local --backend llama --model qwen2.5-coder-0.5b-instruct --port 8000
python -m serve_local --backend transformers --model smollm2-135m-instruct
"""

from __future__ import annotations

import argparse
import os
import sys

import uvicorn

from serve_local.app import create_app
from serve_local.backends.draft import DRAFT_MODES
from serve_local.backends.registry import BACKENDS, DEFAULT, build
from serve_local.errors import StartupError
from serve_local.guard import DEFAULT_MAX_BODY_MB, Limits
from serve_local.toolgrammar import GRAMMAR_MODES


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m serve_local",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", default=DEFAULT, choices=list(BACKENDS))
    parser.add_argument(
        "--model",
        default=os.environ.get("MODEL") or None,
        help="GGUF file, model folder, hf:<repo>/<file>, or a packaged name "
        "(default: $MODEL, else a Qwen2.5-0.5B-Instruct GGUF in the Hugging Face cache, else "
        "the packaged Qwen2.5-Coder-1.5B-Instruct; python -m serve_local.models list)",
    )
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
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    parser.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="llama backend: evaluate every prompt from scratch (for comparisons)",
    )
    parser.add_argument(
        "--written-replies",
        action="store_true",
        help="model backends: render a past reply of this server as the model wrote it, not in "
        "the chat template's form, so the prefix cache keeps it (off by default: the model then "
        "reads its own call shapes back and may copy them as text; see docs/server.md)",
    )
    parser.add_argument(
        "--tool-grammar",
        default=os.environ.get("TOOL_GRAMMAR") or "lazy",
        choices=list(GRAMMAR_MODES),
        help="model backends: 'lazy' constrains a tool call to an offered tool and its argument "
        "schema from the moment the reply starts one (from the first token under "
        "tool_choice 'required'); 'off' parses free text only (default: lazy)",
    )
    parser.add_argument(
        "--draft",
        default=os.environ.get("DRAFT") or "off",
        choices=list(DRAFT_MODES),
        help="llama backend: 'prompt-lookup' drafts tokens by finding the reply's last words "
        "earlier in the context and verifies them in one batch (speculative decoding; "
        "make bench BENCH_PARTS=draft measures it); default: off",
    )
    parser.add_argument(
        "--draft-tokens", type=_at_least_one, default=10, help="tokens per draft (default 10)"
    )
    parser.add_argument(
        "--draft-ngram", type=_at_least_one, default=2, help="longest n-gram looked up (default 2)"
    )
    parser.add_argument(
        "--device", default="cpu", choices=["cpu", "cuda", "auto"], help="transformers backend only"
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="scripted backend only: delay before each reply",
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    try:
        backend = build(args)
    except StartupError as exc:
        print(f"serve_local: {exc}", file=sys.stderr, flush=True)
        return 2
    servers: list[uvicorn.Server] = []

    def give_up() -> None:
        servers[0].should_exit = True

    limits = Limits.for_address(args.host, args.allow_host, args.max_body_mb)
    app = create_app(backend, on_load_failure=give_up, limits=limits)
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
