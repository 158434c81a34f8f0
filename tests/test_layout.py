"""The architecture holds by itself: the import-linter contracts in pyproject.toml (the stages
of evals as layers, harness and serve_local independent, neither importing evals, the product
never importing the lab, the lab's own layers, no circles)
pass, they catch a breach when one is made, and no import of the project's own modules is
hidden inside a function or under TYPE_CHECKING to dodge a circle."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGES = ("evals", "harness", "serve_local", "lab")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 9 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # A stage importing one above it: the record (the bottom) reading the report.
        ("evals/record/spec.py", "import evals.report.summary", "evals: the stages are layers"),
        ("harness/loop.py", "import serve_local.app", "harness and serve_local never import"),
        ("serve_local/app.py", "import evals.record", "neither imports evals"),
        # The eval core reading a module of the server's own, not its public one.
        ("evals/run/recorder.py", "import serve_local.callshape", "through its public modules"),
        # The product reading the lab: what pip installs would not run without the checkout.
        ("evals/report/compare.py", "import lab.report.quoted", "never imports the lab"),
        # A worker, run under another virtualenv's interpreter, reading the project.
        ("evals/workerside.py", "import evals.errors", "the workers (run in other virtualenvs)"),
        ("evals/tau2/trajectories.py", "import evals.tau2.tasks", "the workers (run in other"),
        # The lab's docs writers reading one of its studies.
        ("lab/report/quoted.py", "import lab.studies.sweep", "lab: the studies and the docs"),
    ],
)
def test_a_breach_of_the_layout_is_caught(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    done = _lint(tmp_path)
    assert done.returncode == 1
    assert f"{broken}" in done.stdout and "BROKEN" in done.stdout, done.stdout


def _hidden_imports(path: Path) -> list[str]:
    """Imports of the project's modules inside a function or under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def project(node: ast.Import | ast.ImportFrom) -> bool:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        return (
            node.level > 0
            if isinstance(node, ast.ImportFrom) and node.level
            else any((n or "").split(".")[0] in PACKAGES for n in names)
        )

    def visit(node: ast.AST, hidden: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = hidden or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inside = True
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside and project(child):
                found.append(f"{path.relative_to(ROOT)}:{child.lineno}: {ast.unparse(child)}")
            visit(child, inside)

    visit(tree, False)
    return found


def test_no_import_of_the_project_is_hidden_to_dodge_a_circle() -> None:
    """Lazy imports stay only for optional or heavy third-party packages (llama_cpp, torch,
    inspect_ai, psycopg, playwright), which the contracts do not see."""
    hidden = [
        h for p in PACKAGES for f in sorted((ROOT / p).rglob("*.py")) for h in _hidden_imports(f)
    ]
    assert hidden == []
