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


def wait_ready(base_url: str, timeout_s: float = 600.0) -> None:
    """Block until ``/health`` says 200 (the model has loaded); fail if loading failed."""
    import time

    root = base_url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = httpx.get(f"{root}/health", timeout=5).status_code
        if status == 200:
            return
        if status != 503:
            raise AssertionError(f"/health answered {status}: the model failed to load")
        time.sleep(0.1)
    raise AssertionError("the model did not load in time")
