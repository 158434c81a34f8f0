"""The one Markdown table writer, and the committed tables rebuilt through it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from evals.report.markdown import table
from evals.studies.serving import markdown as bench_markdown
from tests.helpers import ROOT


def test_a_pipe_or_newline_in_a_cell_stays_in_its_cell() -> None:
    text = table(["a", "b"], [["x | y", "one\ntwo"], [0.5, [1, 2]]])
    assert text.splitlines() == [
        "| a | b |",
        "|---|---|",
        "| x \\| y | one two |",
        "| 0.500000 | [1, 2] |",
    ]


def test_bench_md_is_rebuilt_from_the_committed_bench_json() -> None:
    results = ROOT / "results"
    report = json.loads((results / "bench.json").read_text())
    assert bench_markdown(report) == (results / "bench.md").read_text()


def test_nothing_outside_serve_local_calls_a_private_method_of_its_backends() -> None:
    """The floor measurement uses the backend's public seam (prompt_tokens, generate)."""
    reached = []
    for path in sorted((ROOT / "evals").rglob("*.py")) + sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                reached.append(f"{Path(path).relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert reached == []
