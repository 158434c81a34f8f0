"""Model text as a terminal may show it.

A model's answer, a tool result or an error that quotes them can hold control characters:
``ESC[2J`` clears the screen, an OSC sequence sets the window title or writes a link, a
carriage return overwrites the line before it. Printed as they are, the terminal obeys them.
``printable`` shows each such character as an escape (``\\x1b``) instead; line feeds and tabs
stay as they are.
"""

from __future__ import annotations

import re

# C0 controls but tab and line feed, DEL, C1 controls, and the line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape, never obeyed."""
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)
