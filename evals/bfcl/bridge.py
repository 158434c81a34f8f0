"""The main process's side of the pipe to BFCL's checker (``evals/bfcl/checker.py``), which
runs under the BFCL virtualenv's interpreter: its data and its verdicts, one JSON line each
way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evals.pipe import PipeFailed, PipeWorker

ROOT = Path(__file__).resolve().parents[2]
CHECKER = Path(__file__).with_name("checker.py")
# Where `make bfcl` (and `make test`) put BFCL's virtualenv; BFCL_PYTHON names another.
DEFAULT_PYTHON = ROOT / ".venv-bfcl" / "bin" / "python"


class BfclUnavailable(PipeFailed):
    """BFCL's virtualenv is missing, or its checker does not start, died, hung or broke the
    protocol."""


def bfcl_python() -> Path:
    return Path(os.environ.get("BFCL_PYTHON") or DEFAULT_PYTHON)


class Checker(PipeWorker):
    """One checker process; requests are answered in order, one at a time."""

    script = CHECKER
    title = "BFCL's checker"
    install_hint = "`make bfcl-venv` creates it (or set BFCL_PYTHON to a Python with bfcl-eval)."
    unavailable = BfclUnavailable

    def __init__(self, python: Path | None = None) -> None:
        super().__init__(python or bfcl_python())

    def extra_env(self, folder: str) -> dict[str, str]:
        # BFCL's code runs on what a model asked for, and the checker confines itself to its
        # folder before reading a request; BFCL writes its file locks, result and score
        # folders there, and reads its data from the package.
        return {"BFCL_PROJECT_ROOT": folder, "OPENAI_API_KEY": "unused-by-the-checker"}

    @property
    def version(self) -> str | None:
        return str(self.hello["bfcl_eval"]) if self.hello else None

    @property
    def sandbox(self) -> str | None:
        """What confines the checker, as it reported it."""
        return str(self.hello.get("sandbox")) if self.hello else None

    async def load(self, categories: list[str]) -> dict[str, Any]:
        """Every item of ``categories``, as BFCL's OpenAI handler would send it."""
        return await self.ask({"op": "load", "categories": categories})

    async def score(self, item_id: str, category: str, result: Any) -> dict[str, Any]:
        """BFCL's verdict on one model result: ``valid``, ``error_type``, ``errors``."""
        return await self.ask(
            {"op": "score", "id": item_id, "category": category, "result": result}
        )

    async def load_multi(self, categories: list[str]) -> dict[str, Any]:
        """Every entry of the multi-turn ``categories``: turns, tools, held-back tools."""
        return await self.ask({"op": "load_multi", "categories": categories})

    async def execute(self, entry_id: str, key: str, calls: list[dict[str, str]]) -> dict[str, Any]:
        """One step's calls (``{name: arguments JSON}`` each) run on the conversation ``key``'s
        backend instances: ``decoded``, ``results`` (text, one per call), ``states``."""
        return await self.ask({"op": "execute", "id": entry_id, "key": key, "calls": calls})

    async def forget(self, key: str) -> None:
        await self.ask({"op": "forget", "key": key})

    async def score_multi(self, entry_id: str, category: str, result: Any) -> dict[str, Any]:
        """BFCL's multi-turn verdict on every step's calls of every turn."""
        return await self.ask(
            {"op": "score_multi", "id": entry_id, "category": category, "result": result}
        )
