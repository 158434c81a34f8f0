"""τ²'s own user simulator's first message, after τ²'s greeting, on the first tasks of a split:
whose doing is it when telecom's user stops at once, the model's or a server's?

Run by the interpreter of τ²'s virtualenv, against any OpenAI-shaped server (ours, llama.cpp's
``llama-server``), greedy, as τ²'s runner asks it (its ``UserSimulator``, its tools, LiteLLM):

    .venv-tau2/bin/python lab/studies/tau2_user_opening.py URL N [DOMAIN [SPLIT]] > out.jsonl

One JSON line a task: its id, how many tools the user holds, the first message's words and
calls. It imports nothing of the project (τ² lives in a virtualenv of its own)."""

from __future__ import annotations

import json
import os
import sys
from copy import deepcopy

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM would fetch its price list

from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
from tau2.registry import registry
from tau2.user.user_simulator import UserSimulator


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    url, n = argv[0], int(argv[1])
    domain = argv[2] if len(argv) > 2 else "telecom"
    split = argv[3] if len(argv) > 3 else "test"
    for task in registry.get_tasks_loader(domain)(split)[:n]:
        environment = registry.get_env_constructor(domain)()
        try:
            tools = environment.get_user_tools()
        except Exception:  # a domain whose user holds no tools (τ²'s run_task does the same)
            tools = None
        user = UserSimulator(
            tools=tools,
            instructions=str(task.user_scenario),
            llm="openai/user",
            llm_args={"api_base": url, "api_key": "unused", "temperature": 0.0},
        )
        message, _ = user.generate_next_message(
            deepcopy(DEFAULT_FIRST_AGENT_MESSAGE), user.get_init_state()
        )
        calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls or []]
        line = {"task": task.id, "user_tools": len(tools or []), "content": message.content}
        print(json.dumps(line | {"calls": calls}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
