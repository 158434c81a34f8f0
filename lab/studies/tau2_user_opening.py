"""τ²'s own user simulator's first message, after τ²'s greeting, on the first tasks of a split:
whose doing is it when telecom's user stops at once, the model's or a server's?

Run by the interpreter of τ²'s virtualenv, against any OpenAI-shaped server (ours, llama.cpp's
``llama-server``), greedy, as τ²'s runner asks it (its ``UserSimulator``, its tools, LiteLLM):

    .venv-tau2/bin/python lab/studies/tau2_user_opening.py URL N [DOMAIN [SPLIT]] > out.jsonl
    .venv-tau2/bin/python lab/studies/tau2_user_opening.py --user-tools unheld URL N ...

``--user-tools`` picks the arm: ``held``, τ²'s own (its prompt for a user with tools, the tools
sent with the request); ``unheld``, the same prompt with no tools sent (what the tools' schemas
in the prompt do); ``none``, τ²'s prompt for a user without tools and none sent (what its
tools' guidelines do). Only ``held`` is τ²'s runner; the others take a part of it away.

One JSON line a task: its id, the arm, how many tools the request sent, the first message's
words and calls. It imports nothing of the project (τ² lives in a virtualenv of its own)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from copy import deepcopy

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM would fetch its price list

from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
from tau2.registry import registry
from tau2.user.user_simulator import UserSimulator


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("url")
    parser.add_argument("n", type=int)
    parser.add_argument("domain", nargs="?", default="telecom")
    parser.add_argument("split", nargs="?", default="test")
    parser.add_argument("--user-tools", choices=("held", "unheld", "none"), default="held")
    args = parser.parse_args(argv)
    for task in registry.get_tasks_loader(args.domain)(args.split)[: args.n]:
        environment = registry.get_env_constructor(args.domain)()
        try:
            tools = environment.get_user_tools()
        except Exception:  # a domain whose user holds no tools (τ²'s run_task does the same)
            tools = None
        user = UserSimulator(
            tools=None if args.user_tools == "none" else tools,
            instructions=str(task.user_scenario),
            llm="openai/user",
            llm_args={"api_base": args.url, "api_key": "unused", "temperature": 0.0},
        )
        state = user.get_init_state()  # the prompt is chosen here, by whether tools are held
        if args.user_tools == "unheld":
            user.tools = None  # so the request sends none
        message, _ = user.generate_next_message(deepcopy(DEFAULT_FIRST_AGENT_MESSAGE), state)
        calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls or []]
        line = {"task": task.id, "arm": args.user_tools, "user_tools": len(user.tools or [])}
        print(json.dumps(line | {"content": message.content, "calls": calls}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
