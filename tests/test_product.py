"""What ``pip install .`` installs is the product (``serve_local``, ``harness``, ``evals``): no
study, conformance run or writer of this repository's docs (those are ``lab/``, run from the
checkout by ``make``), and nothing in it names this repository's ``docs/`` or its committed
``results/``. A user's own output folders under the working folder, ``results/runs/`` and
``results/local/``, are theirs and may be named."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

PRODUCT = ("evals", "harness", "serve_local")
# A path into docs/ or results/ (other than the user's results/runs/ and results/local/), as
# text or as a Path built from parts.
NAMED = re.compile(
    r"(?<![\w.])(docs|results)/(?!(runs|local)\b)"
    r"|(/\s*|Path\(\s*)[\"'](docs|results)[\"']"
    r"|[\"'](docs|results)[\"']\s*/"
)
TEXT = (".py", ".json", ".jsonl", ".md", ".txt", ".j2", ".js", ".css", ".html", ".yaml", ".toml")


def named(text: str) -> list[str]:
    """The lines of ``text`` that name a path into this repository's docs or results."""
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if NAMED.search(line)]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ('COMMITTED = Path(__file__).resolve().parents[2] / "results" / "bfcl"', True),
        ('DOCS = ROOT / "docs" / "bfcl.md"', True),
        ('help="fill docs/tau2.md from the runs under results/tau2/"', True),
        ('out = Path("results") / "bfcl"', True),
        ('RUNS = Path("results/runs")', False),
        ('local = Path("results/local/tau2")', False),
        ('return {"decoded": decoded, "results": results}', False),
    ],
)
def test_the_scan_finds_a_path_into_docs_or_results_and_nothing_else(
    line: str, found: bool
) -> None:
    assert bool(named(line)) is found, line


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip install .`` would install, built from a copy of the checkout."""
    source = tmp_path_factory.mktemp("source")
    for package in (*PRODUCT, "lab"):  # the lab beside it, as in the checkout
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         str(source), "-w", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (found,) = out.glob("*.whl")
    return found


def test_pip_installs_the_product_and_no_study_or_docs_writer(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == set(PRODUCT), tops
    writers = re.compile(r"/(studies|conformance)/|report/(docs|quoted|tau2)\.py")
    assert [n for n in names if writers.search(n)] == []


def test_nothing_installed_names_this_repositorys_docs_or_committed_results(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    found = {
        name: lines
        for name in archive.namelist()
        if name.endswith(TEXT) and ".dist-info/" not in name
        if (lines := named(archive.read(name).decode("utf-8", "replace")))
    }
    assert found == {}, found
