"""The one Markdown table writer: every table a summary or a report holds goes through ``table``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.display import printable


def cell(value: Any) -> str:
    """A value as cell text. A pipe would end the cell and a newline the row, and HTML in a
    model's answer would be markup wherever the Markdown is shown: all are escaped here and
    nowhere else, so callers pass plain text."""
    if isinstance(value, float):
        text = f"{value:.6f}" if abs(value) < 1 else f"{value:,.2f}"
    elif isinstance(value, (list, dict)):
        text = json.dumps(value)
    else:
        text = str(value)
    # "<" and "&" are what start markup; ">" alone cannot, and our own "->" stays readable.
    text = printable(text).replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def clip(text: str, chars: int) -> str:
    """``text`` on one line, whitespace runs made single spaces, at most ``chars`` characters:
    where cut, the last is an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def table(head: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table, ending in a newline."""
    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# The ladder's models as the README and docs name them.
MODEL_LABELS = {
    "qwen2.5-coder-1.5b-instruct": "Qwen2.5-Coder-1.5B",
    "qwen2.5-coder-0.5b-instruct": "Qwen2.5-Coder-0.5B",
    "smollm2-135m-instruct": "SmolLM2-135M",
}


def model_label(model: str) -> str:
    return MODEL_LABELS.get(model, model)
