"""A backend another package adds: the scripted provider under its own name, with an option of
its own."""

from __future__ import annotations

import argparse
from typing import Any

from serve_local.backends import scripted
from serve_local.backends.options import Option

OPTIONS: tuple[Option, ...] = (
    Option("--clock-face", "what the clock's models are called", "face"),
)


class ClockBackend(scripted.ScriptedBackend):
    name = "clock"

    def __init__(self, face: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.face = face

    def models(self) -> list[dict[str, Any]]:
        return [{**m, "backend": self.name, "face": self.face} for m in super().models()]


def from_args(args: argparse.Namespace) -> Any:
    return ClockBackend(args.clock_face)
