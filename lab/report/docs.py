"""Figures in the docs written by the command that measures them, never copied by hand.

A Markdown page holds a block between ``<!-- NAME -->`` and ``<!-- /NAME -->``; the command
that builds the result replaces what lies between with what it rendered, and a test renders
the block again from the committed result and compares, so a page cannot drift from
``results/``.
"""

from __future__ import annotations

import re
from pathlib import Path

from evals.errors import EvalError


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- {re.escape(name)} -->\n)(.*?)(<!-- /{re.escape(name)} -->)", re.DOTALL
    )


def block(page: Path, name: str) -> str:
    """What lies between the markers ``name`` of ``page``."""
    found = _pattern(name).search(page.read_text(encoding="utf-8"))
    if found is None:
        raise EvalError(f"{page} has no <!-- {name} --> … <!-- /{name} --> block")
    return found.group(2)


def fill(page: Path, name: str, text: str) -> bool:
    """Put ``text`` between the markers ``name`` of ``page``; True when the page changed."""
    old = page.read_text(encoding="utf-8")
    body = text if text.endswith("\n") else text + "\n"
    new, count = _pattern(name).subn(lambda m: m.group(1) + body + m.group(3), old, count=1)
    if count == 0:
        raise EvalError(f"{page} has no <!-- {name} --> … <!-- /{name} --> block")
    if new != old:
        page.write_text(new, encoding="utf-8")
    return new != old
