"""BFCL's own data and checker, behind a pipe: run by the interpreter of the separate BFCL
virtualenv (``.venv-bfcl``), never imported by the main process.

``bfcl-eval`` pins old versions of numpy and filelock and imports a dozen API clients on the
way to its checker, so it lives in its own virtualenv; this file imports nothing of the
project but ``sandbox.py`` beside it, only the standard library and ``bfcl_eval``. It is run by
path, as ``python -I evals/workerside.py evals/bfcl/checker.py`` (isolated: the folder of this
file is not put on ``sys.path``).

One JSON request per line on stdin, one JSON answer per line on the answers' descriptor
(``evals/workerside.py``, the worker's end of ``evals/pipe.py``, serves :func:`answer`; the
first line, :func:`hello`, says which bfcl-eval it is and how the process is confined):

- ``{"op": "load", "categories": [...]}``: every item of those categories as BFCL's own
  OpenAI function-calling handler would send it (the first turn's messages, the functions
  turned into OpenAI tools by BFCL's ``convert_to_tool`` with its type mapping, the language
  hint BFCL adds to each description), the tool names mapped back to BFCL's function names,
  and the item's ground truth.
- ``{"op": "score", "id": ..., "category": ..., "result": ...}``: BFCL's verdict on one
  model result in the form BFCL's OpenAI handler records it (a list of ``{name: arguments
  JSON text}``, or the reply's text when it made no call), through BFCL's own per-item
  evaluation (decoding, output-format check, AST checker; for irrelevance, no call decoded).

- ``{"op": "load_multi", "categories": [...]}``: every entry of those multi-turn categories:
  its user turns, the functions of its involved classes as OpenAI tools (those BFCL holds
  back under ``miss_func`` apart, by the turn that offers them), the classes, and the ground
  truth per turn.
- ``{"op": "execute", "id": ..., "key": ..., "calls": [{name: arguments JSON text}]}``: the
  calls of one step run against BFCL's own backend instances of that entry (one set per
  ``key``: a run's conversation), decoded and executed as BFCL's handler does during
  inference; their results as text, and the instances' states.
- ``{"op": "score_multi", "id": ..., "category": ..., "result": [[[{name: args}]]]}``: BFCL's
  multi-turn verdict (state and response checkers) on the calls of every step of every turn,
  through BFCL's own per-entry evaluation.
- ``{"op": "forget", "key": ...}``: the backend instances of a finished conversation dropped.

An answer that went wrong is ``{"error": "..."}``; the loop goes on.

BFCL runs a multi-turn call by pasting its function name and argument keys into a string and
``eval``-ing it. Nothing the model wrote reaches that string here: every call of ``execute``
and ``score_multi`` must name one of the entry's own functions, with keys that are identifiers
its parameters declare, and the string is built from those names and the ``repr`` of values
read as JSON; anything else is refused before BFCL sees it. The process itself runs in a
folder of its own under a Landlock sandbox (``sandbox.py`` beside this file): it can write
nowhere else, run no program and open no TCP connection.
"""

from __future__ import annotations

import copy
import json
import keyword
import os
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

# The OpenAI handler builds an API client on creation; the checker never sends a request.
os.environ.setdefault("OPENAI_API_KEY", "unused-by-the-checker")

from bfcl_eval.constants.default_prompts import (
    DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
    MAXIMUM_STEP_LIMIT,
)
from bfcl_eval.constants.enums import Language, ModelStyle, ReturnFormat
from bfcl_eval.constants.executable_backend_config import (
    OMIT_STATE_INFO_CLASSES,
    STATELESS_CLASSES,
)
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.eval_runner import (
    _evaluate_single_ast_entry,
    _evaluate_single_multi_turn_entry,
    _evaluate_single_relevance_entry,
)
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
)
from bfcl_eval.model_handler.api_inference.openai_completion import (
    OpenAICompletionsHandler,
)
from bfcl_eval.model_handler.utils import convert_to_tool
from bfcl_eval.utils import (
    is_java,
    is_js,
    is_multi_turn,
    is_relevance_or_irrelevance,
    load_dataset_entry,
    load_ground_truth_entry,
)

from . import sandbox  # beside this file (the launcher loads it as a package over it)

# The checker reads a model's registry entry for one thing only: whether to turn the dots of
# BFCL's function names into underscores before comparing. The calls it is given carry BFCL's
# own names (mapped back from the tool names), so the entry must say no; this one is the
# Qwen family's OpenAI-compatible endpoint, and the check below holds it to that.
CHECKER_MODEL = "qwen3-235b-a22b-instruct-2507-FC"


class Refused(ValueError):
    """A call that names no function of the entry, or a key its function does not declare."""


def _declared(functions: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each function's name and the keys its parameters declare."""
    return {
        str(f["name"]): set((f.get("parameters") or {}).get("properties") or {}) for f in functions
    }


def call_text(declared: dict[str, set[str]], name: str, arguments: Any) -> tuple[str, str]:
    """``name(key=value, ...)`` as BFCL evaluates it, built from a declared function name, keys
    its parameters declare and the ``repr`` of values read from JSON; and the arguments as JSON
    again. Anything else is :class:`Refused`."""
    if not isinstance(name, str) or name not in declared or not _identifier(name):
        raise Refused(f"{name!r} is not one of this entry's functions")
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(args, dict):
        raise Refused(f"the arguments of {name} are not a JSON object")
    for key in args:
        if not isinstance(key, str) or key not in declared[name] or not _identifier(key):
            raise Refused(f"{key!r} is not a parameter of {name}")
    text = f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"
    return text, json.dumps(args)


def _identifier(word: str) -> bool:
    return word.isidentifier() and not keyword.iskeyword(word) and word.isascii()


class Bfcl:
    def __init__(self) -> None:
        if MODEL_CONFIG_MAPPING[CHECKER_MODEL].underscore_to_dot:
            raise SystemExit(f"{CHECKER_MODEL} maps dots to underscores in this bfcl-eval")
        self.handler = OpenAICompletionsHandler(
            model_name=CHECKER_MODEL, temperature=0, registry_name=CHECKER_MODEL, is_fc_model=True
        )
        self.prompts: dict[str, dict[str, Any]] = {}  # id -> entry without language hints
        self.truth: dict[str, list[Any]] = {}  # id -> ground truth
        self.sent: dict[str, dict[str, Any]] = {}  # id -> multi-turn entry as inference has it
        self.declared: dict[str, dict[str, set[str]]] = {}  # id -> its functions' keys
        self.loaded: set[str] = set()
        self.scored = 0  # multi-turn verdicts given: each re-executes on instances of its own

    def _load_category(self, category: str) -> None:
        if category in self.loaded:
            return
        for entry in load_dataset_entry(
            category, include_prereq=False, include_language_specific_hint=False
        ):
            self.prompts[entry["id"]] = entry
        if is_multi_turn(category):
            # What inference sends: the functions with the language hint, those held back apart.
            for entry in load_dataset_entry(category, include_prereq=False):
                self.sent[entry["id"]] = entry
                held = [f for fs in entry.get("missed_function", {}).values() for f in fs]
                self.declared[entry["id"]] = _declared([*entry["function"], *held])
        if not is_relevance_or_irrelevance(category):
            for answer in load_ground_truth_entry(category):
                self.truth[answer["id"]] = answer["ground_truth"]
        self.loaded.add(category)

    def load(self, categories: list[str]) -> dict[str, Any]:
        items = []
        for category in categories:
            self._load_category(category)
            # What the generation step sends: the functions with BFCL's language hint.
            for entry in load_dataset_entry(category, include_prereq=False):
                functions = entry["function"]
                tools = convert_to_tool(
                    functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS
                )
                names = {
                    tool["function"]["name"]: function["name"]
                    for tool, function in zip(tools, functions, strict=True)
                }
                items.append(
                    {
                        "id": entry["id"],
                        "category": category,
                        "messages": entry["question"][0],
                        "tools": tools,
                        "names": names,
                        "functions": self.prompts[entry["id"]]["function"],
                        "ground_truth": self.truth.get(entry["id"]),
                    }
                )
        return {"items": items, "bfcl_eval": version("bfcl-eval"), "checker_model": CHECKER_MODEL}

    def _tools(self, functions: list[dict[str, Any]]) -> tuple[list[Any], dict[str, str]]:
        tools = convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
        names = {
            tool["function"]["name"]: function["name"]
            for tool, function in zip(tools, functions, strict=True)
        }
        return tools, names

    def load_multi(self, categories: list[str]) -> dict[str, Any]:
        entries = []
        for category in categories:
            if not is_multi_turn(category):
                raise ValueError(f"{category} is not a multi-turn category")
            self._load_category(category)
            for entry_id, entry in self.sent.items():
                if (
                    not entry_id.startswith(category + "_")
                    or not entry_id.removeprefix(category + "_").isdigit()
                ):
                    continue
                tools, names = self._tools(entry["function"])
                held = {}
                for turn, functions in entry.get("missed_function", {}).items():
                    more, more_names = self._tools(functions)
                    names.update(more_names)
                    held[turn] = more
                entries.append(
                    {
                        "id": entry_id,
                        "category": category,
                        "turns": entry["question"],
                        "tools": tools,
                        "names": names,
                        "held": held,
                        "involved_classes": entry["involved_classes"],
                        "ground_truth": self.truth.get(entry_id),
                    }
                )
        return {
            "entries": entries,
            "bfcl_eval": version("bfcl-eval"),
            "checker_model": CHECKER_MODEL,
            "step_limit": MAXIMUM_STEP_LIMIT,
            "held_prompt": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        }

    def _instances(
        self, entry_id: str, key: str, calls: list[str]
    ) -> tuple[list[str], dict[str, Any]]:
        entry = self.prompts[entry_id]
        category = entry_id.rsplit("_", 1)[0]
        found: tuple[list[str], dict[str, Any]] = execute_multi_turn_func_call(
            calls,
            entry.get("initial_config", {}),
            entry["involved_classes"],
            f"loopbench_{key}",
            entry_id,
            long_context="long_context" in category or "composite" in category,
            is_evaL_run=False,
        )
        return found

    def _checked(self, entry_id: str, calls: list[Any]) -> list[tuple[str, str, str]]:
        """Each of one step's calls as (name, code, arguments JSON), or Refused."""
        declared = self.declared[entry_id]
        found = []
        for call in calls:
            if not isinstance(call, dict):
                raise Refused("a call must be {name: arguments}")
            for name, arguments in call.items():
                found.append((name, *call_text(declared, name, arguments)))
        return found

    def execute(self, entry_id: str, key: str, calls: list[dict[str, str]]) -> dict[str, Any]:
        if not _identifier(f"loopbench_{key}"):  # BFCL names instances with it, in code
            raise Refused(f"a conversation key must be an identifier, not {key!r}")
        """One step's calls, built from validated parts and run as BFCL's inference runs
        them."""
        self._load_category(entry_id.rsplit("_", 1)[0])
        decoded = [code for _, code, _ in self._checked(entry_id, calls)]
        results, instances = self._instances(entry_id, key, decoded)
        return {"decoded": decoded, "results": results, "states": _states(instances)}

    def forget(self, key: str) -> dict[str, Any]:
        """Drop the instances BFCL keeps for a conversation (by name, in its module)."""
        prefix = re.sub(r"[-./:]", "_", f"loopbench_{key}_")
        names = [n for n in vars(multi_turn_utils) if n.startswith(prefix)]
        for name in names:
            delattr(multi_turn_utils, name)
        return {"forgot": len(names)}

    def score_multi(self, entry_id: str, category: str, result: Any) -> dict[str, Any]:
        self._load_category(category)
        # BFCL decodes every step's calls into code again: only checked ones, as JSON we wrote.
        result = [
            [[{name: args} for name, _, args in self._checked(entry_id, step)] for step in turn]
            for turn in result
        ]
        self.scored += 1
        # The checker replays the calls on instances named after this model name: one each.
        name = f"loopbench_score_{self.scored}"
        verdict = _evaluate_single_multi_turn_entry(
            self.handler,
            entry_id,
            result,
            self.truth[entry_id],
            copy.deepcopy(self.prompts[entry_id]),
            name,
            category,
        )
        self.forget(f"score_{self.scored}")
        error = verdict.get("error") or {}
        messages = error.get("error_message", [])
        return {
            "valid": bool(verdict["valid"]),
            "error_type": error.get("error_type"),
            "errors": [str(m) for m in (messages if isinstance(messages, list) else [messages])],
        }

    def score(self, item_id: str, category: str, result: Any) -> dict[str, Any]:
        self._load_category(category)
        prompt = self.prompts[item_id]
        if is_relevance_or_irrelevance(category):
            verdict = _evaluate_single_relevance_entry(
                self.handler, item_id, result, prompt, CHECKER_MODEL, category
            )
        else:
            if is_java(category):
                language, form = Language.JAVA, ReturnFormat.JAVA
            elif is_js(category):
                language, form = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
            else:
                language, form = Language.PYTHON, ReturnFormat.PYTHON
            verdict = _evaluate_single_ast_entry(
                self.handler,
                item_id,
                result,
                self.truth[item_id],
                prompt,
                CHECKER_MODEL,
                category,
                language=language,
                return_format=form,
                has_tool_call_tag=False,
            )
        return {
            "valid": bool(verdict["valid"]),
            "error_type": verdict.get("error_type"),
            "errors": [str(e) for e in verdict.get("error", [])],
        }


def _states(instances: dict[str, Any]) -> dict[str, Any]:
    """Each stateful instance's public attributes, as BFCL logs them, made JSON."""
    return {
        name: json.loads(json.dumps(
            {k: v for k, v in vars(instance).items() if not k.startswith("_")}, default=str
        ))
        for name, instance in instances.items()
        if name not in STATELESS_CLASSES and name not in OMIT_STATE_INFO_CLASSES
    }  # fmt: skip


BFCL = Bfcl()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "load":
        return BFCL.load(list(request["categories"]))
    if request.get("op") == "load_multi":
        return BFCL.load_multi(list(request["categories"]))
    if request.get("op") == "execute":
        return BFCL.execute(str(request["id"]), str(request["key"]), list(request["calls"]))
    if request.get("op") == "forget":
        return BFCL.forget(str(request["key"]))
    if request.get("op") == "score_multi":
        return BFCL.score_multi(str(request["id"]), str(request["category"]), request.get("result"))
    if request.get("op") == "score":
        return BFCL.score(str(request["id"]), str(request["category"]), request.get("result"))
    return {"error": f"unknown op {request.get('op')!r}"}


def hello() -> dict[str, Any]:
    """This process confined to its working folder (``sandbox.py``): the first line's
    contents."""
    return {"bfcl_eval": version("bfcl-eval"), "sandbox": sandbox.confine(Path.cwd())}
