"""A backend a test adds: one module with its options and its factory, and one registry line
(tests/test_backend_options.py)."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from serve_local.backends.base import Completion
from serve_local.backends.options import Option
from serve_local.schema import ChatRequest

OPTIONS: tuple[Option, ...] = (
    Option("--greeting", "what every reply says", "hello"),
    Option("--shout", "say it in capitals", False, switch=True),
)


class EchoBackend:
    name = "echo"
    load_error: str | None = None

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def load(self) -> None:
        return None

    @property
    def ready(self) -> bool:
        return True

    def models(self) -> list[dict[str, Any]]:
        return [{"id": "echo", "backend": self.name, "greeting": self.greeting}]

    async def complete(
        self, request: ChatRequest, cancel: threading.Event | None = None
    ) -> Completion:
        raise NotImplementedError  # the test reads /v1/models only


def from_args(args: argparse.Namespace) -> EchoBackend:
    return EchoBackend(args.greeting.upper() if args.shout else args.greeting)
