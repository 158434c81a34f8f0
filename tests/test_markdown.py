"""The one Markdown table writer, and the committed tables rebuilt through it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from evals.markdown import table
from lab.studies.serving.common import Part
from lab.studies.serving.suite import markdown as bench_markdown
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


def test_a_part_run_alone_leaves_the_others_naming_where_they_were_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench.md's header names this run's machine and code; a part kept from an earlier run
    names its own under it, once, after one blank line."""
    from lab.studies.serving import suite

    def part(name: str, text: str) -> Part:
        return Part(name, lambda echo: {"text": text}, lambda f: [f"## {name}", "", f["text"]])

    parts = {"old": part("old", "| a |\n|---|\n| 1 |\n"), "new": part("new", "fresh")}
    monkeypatch.setattr(suite, "PARTS", parts)
    monkeypatch.setattr(suite, "SHOWN", ("old", "new"))
    monkeypatch.setattr(suite, "write_docs", lambda report: None)
    elsewhere = {"cores": 64, "cpu": "Elsewhere CPU", "platform": "x"}
    kept = {"machine": elsewhere, "versions": {"python": "3.0"}, "code_version": "0ld",
            "parts": {"old": {"text": "| a |\n|---|\n| 1 |\n"}}}  # fmt: skip
    (tmp_path / "bench.json").write_text(json.dumps(kept))
    report = suite.run_bench(["new"], tmp_path, echo=lambda line: None)
    text = (tmp_path / "bench.md").read_text()
    assert (
        report["machine"] != elsewhere
        and report["parts"]["old"]["measured"]["code_version"] == "0ld"
    )
    assert "Elsewhere CPU" not in text.split("## old")[0]  # the header is this run's
    note = "Measured apart from the header's run: 64 cores, Elsewhere CPU; python 3.0; code `0ld`."
    assert f"| 1 |\n\n{note}\n\n## new" in text and text.count("Measured apart") == 1
    # Run again whole, nothing is apart.
    suite.run_bench(["old", "new"], tmp_path, echo=lambda line: None)
    assert "Measured apart" not in (tmp_path / "bench.md").read_text()


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


def test_model_text_in_a_cell_is_neither_markup_nor_terminal_control() -> None:
    from evals.markdown import cell

    answer = '<img src=x onerror="alert(1)"> a | b & c\x1b[2J\x1b]0;pwned\x07\r\nnext'
    text = cell(answer)
    assert "<" not in text and "\x1b" not in text and "\x07" not in text
    assert text == (
        '&lt;img src=x onerror="alert(1)"> a \\| b &amp; c\\x1b[2J\\x1b]0;pwned\\x07\\r next'
    )
    assert cell("read_all e1: ✓ -> ✗") == "read_all e1: ✓ -> ✗"


def test_an_answer_with_html_lands_escaped_in_the_run_summary() -> None:
    from evals.report.summary import summary_markdown
    from tests.helpers import run_record

    record = run_record(task_id="t1", answer="<script>alert(1)</script> errors.log")
    summary = {"model": "m", "model_sha256": "0", "backend": "b", "loop": {}, "turns": 1,
               "tool_runs": 0, "wall_ms": 1.0, "mean_turn_ms": None, "correct": 0, "runs": 1,
               "cost_usd": 0.0}  # fmt: skip
    text = summary_markdown("run.jsonl", summary, [record])
    assert "<script>" not in text and "&lt;script>alert(1)&lt;/script> errors.log" in text


def test_control_characters_in_model_text_are_shown_escaped_in_the_terminal() -> None:
    from harness.display import printable

    assert printable("ok\x1b[2J\x1b]0;title\x07\r done\n\tnext\x9b\u2028") == (
        "ok\\x1b[2J\\x1b]0;title\\x07\\r done\n\tnext\\x9b\\u2028"
    )


def test_an_evals_progress_line_shows_model_text_escaped() -> None:
    from evals.run.progress import Progress

    shown: list[str] = []
    with Progress(total=1, echo=shown.append) as progress:
        progress.finished('files6-01 e1: ✗ answer="\x1b[2J\x1b]0;pwned\x07"')
    assert "\x1b" not in shown[0] and '"\\x1b[2J\\x1b]0;pwned\\x07"' in shown[0]


def test_clip_puts_text_on_one_line_within_its_length() -> None:
    from evals.markdown import clip

    assert clip("a  b\n c", 10) == "a b c"
    assert clip("x" * 12, 10) == "x" * 9 + "…"
    assert len(clip("word " * 50, 81)) == 81
