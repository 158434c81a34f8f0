from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, to prove a folder was left untouched."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def post(url: str, body: Any) -> httpx.Response:
    kwargs: dict[str, Any] = {"content": body} if isinstance(body, (str, bytes)) else {"json": body}
    return httpx.post(f"{url}/chat/completions", timeout=10, **kwargs)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}
