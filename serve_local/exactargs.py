"""Command lines read as written: a flag is never taken for the start of another."""

from __future__ import annotations

import argparse
from typing import Any


class ExactParser(argparse.ArgumentParser):
    """A parser, and each of its sub-commands' parsers, that takes a flag only as it is
    written, never as a prefix of one (``--mode`` is not ``--model``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
