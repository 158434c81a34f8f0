"""BFCL's own data and checker, behind a pipe: run by the interpreter of the separate BFCL
virtualenv (``.venv-bfcl``), never imported by the main process.

``bfcl-eval`` pins old versions of numpy and filelock and imports a dozen API clients on the
way to its checker, so it lives in its own virtualenv; this file imports nothing of the
project, only the standard library and ``bfcl_eval``. It is run by path with ``python -I``
(isolated: the folder of this file is not put on ``sys.path``).

One JSON request per line on stdin, one JSON answer per line on stdout:

- ``{"op": "load", "categories": [...]}``: every item of those categories as BFCL's own
  OpenAI function-calling handler would send it (the first turn's messages, the functions
  turned into OpenAI tools by BFCL's ``convert_to_tool`` with its type mapping, the language
  hint BFCL adds to each description), the tool names mapped back to BFCL's function names,
  and the item's ground truth.
- ``{"op": "score", "id": ..., "category": ..., "result": ...}``: BFCL's verdict on one
  model result in the form BFCL's OpenAI handler records it (a list of ``{name: arguments
  JSON text}``, or the reply's text when it made no call), through BFCL's own per-item
  evaluation (decoding, output-format check, AST checker; for irrelevance, no call decoded).

An answer that went wrong is ``{"error": "..."}``; the loop goes on.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from importlib.metadata import version
from typing import Any

# The OpenAI handler builds an API client on creation; the checker never sends a request.
os.environ.setdefault("OPENAI_API_KEY", "unused-by-the-checker")

from bfcl_eval.constants.enums import Language, ModelStyle, ReturnFormat
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.eval_runner import (
    _evaluate_single_ast_entry,
    _evaluate_single_relevance_entry,
)
from bfcl_eval.model_handler.api_inference.openai_completion import (
    OpenAICompletionsHandler,
)
from bfcl_eval.model_handler.utils import convert_to_tool
from bfcl_eval.utils import (
    is_java,
    is_js,
    is_relevance_or_irrelevance,
    load_dataset_entry,
    load_ground_truth_entry,
)

# The checker reads a model's registry entry for one thing only: whether to turn the dots of
# BFCL's function names into underscores before comparing. The calls it is given carry BFCL's
# own names (mapped back from the tool names), so the entry must say no; this one is the
# Qwen family's OpenAI-compatible endpoint, and the check below holds it to that.
CHECKER_MODEL = "qwen3-235b-a22b-instruct-2507-FC"


class Bfcl:
    def __init__(self) -> None:
        if MODEL_CONFIG_MAPPING[CHECKER_MODEL].underscore_to_dot:
            raise SystemExit(f"{CHECKER_MODEL} maps dots to underscores in this bfcl-eval")
        self.handler = OpenAICompletionsHandler(
            model_name=CHECKER_MODEL, temperature=0, registry_name=CHECKER_MODEL, is_fc_model=True
        )
        self.prompts: dict[str, dict[str, Any]] = {}  # id -> entry without language hints
        self.truth: dict[str, list[Any]] = {}  # id -> ground truth
        self.loaded: set[str] = set()

    def _load_category(self, category: str) -> None:
        if category in self.loaded:
            return
        for entry in load_dataset_entry(
            category, include_prereq=False, include_language_specific_hint=False
        ):
            self.prompts[entry["id"]] = entry
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


def answer(bfcl: Bfcl, request: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "load":
        return bfcl.load(list(request["categories"]))
    if request.get("op") == "score":
        return bfcl.score(str(request["id"]), str(request["category"]), request.get("result"))
    return {"error": f"unknown op {request.get('op')!r}"}


def main() -> None:
    bfcl = Bfcl()
    print(json.dumps({"ready": True, "bfcl_eval": version("bfcl-eval")}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(bfcl, json.loads(line))
        except Exception as exc:  # one bad request must not end the checker
            reply = {"error": f"{exc.__class__.__name__}: {exc}", "trace": traceback.format_exc()}
        print(json.dumps(reply, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
