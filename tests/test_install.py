"""``pip install .`` gives a working ``loopbench`` without make: the package built from a copy
of the source and installed by pip into a virtualenv of its own carries its data (task sets,
presets, templates), installs the ``loopbench`` command, and ``loopbench serve``, ``loopbench
eval`` and ``loopbench stop`` work from a folder outside the repository, on the scripted backend
and on llama.cpp with a packaged model (the llama and models extras). The virtualenv takes
the dependencies already installed here (a plain path to this environment's site, whose
editable install of the project is not loaded), so nothing is downloaded; ``pip check`` there
proves the package's declared requirements are met by them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from serve_local.process import free_port
from tests.helpers import venv_with

ROOT = Path(__file__).parent.parent
SOURCE = ("pyproject.toml", "README.md", "evals", "harness", "serve_local", "lab")


# Every requirement the installed loopbench declares, with the llama extra, met by what is
# installed (pip check would also judge the packages installed here beside it).
MET = """
from importlib.metadata import PackageNotFoundError, distribution, version
from packaging.requirements import Requirement

unmet = []
for r in map(Requirement, distribution("loopbench").requires or []):
    if r.marker is not None and not r.marker.evaluate({"extra": "llama"}):
        continue
    try:
        if not r.specifier.contains(version(r.name), prereleases=True):
            unmet.append(f"{r} (installed {version(r.name)})")
    except PackageNotFoundError:
        unmet.append(f"{r} (not installed)")
print("unmet: " + "; ".join(unmet) if unmet else "met")
raise SystemExit(1 if unmet else 0)
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The virtualenv's bin folder, loopbench installed there by pip from a copy of the source
    (so the build leaves nothing in the repository)."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    source.mkdir()
    for name in SOURCE:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        elif (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    # A plain path, after the virtualenv's own site: its .pth files (the editable install of
    # this project) are not run, so ``evals`` comes from what pip installs.
    python = venv_with(root, source, sysconfig.get_paths()["purelib"])
    return python.parent


def _run(
    bin_dir: Path, *args: str, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
        timeout=timeout, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(cwd)},
    )  # fmt: skip


def test_the_package_installs_its_command_and_its_data(installed: Path, tmp_path: Path) -> None:
    where = _run(
        installed, "python", "-c", "import evals, harness; print(evals.__file__)", cwd=tmp_path
    )
    assert where.returncode == 0, where.stderr
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout
    checked = _run(installed, "python", "-c", MET, cwd=tmp_path)
    assert checked.returncode == 0 and "met" in checked.stdout, checked.stdout + checked.stderr
    shown = _run(installed, "loopbench", "--help", cwd=tmp_path)
    assert shown.returncode == 0 and "serve" in shown.stdout and "eval" in shown.stdout
    # The data files travel with the package: the default task set, the presets.
    found = _run(
        installed, "python", "-c",
        "from evals.tasks import DEFAULT_TASKS; from harness.presets import preset; "
        "preset('analyst'); print(DEFAULT_TASKS)", cwd=tmp_path,
    )  # fmt: skip
    assert found.returncode == 0 and "site-packages" in found.stdout, found.stderr
    tasks = _run(installed, "loopbench", "check-tasks", found.stdout.strip(), cwd=tmp_path)
    assert tasks.returncode == 0, tasks.stdout + tasks.stderr
    # τ²'s committed task files too, its modes' included.
    tau2 = _run(
        installed, "python", "-c",
        "from evals.tau2.tasks import taskset_file; "
        "print(all(taskset_file(*s).exists() for s in "
        "[('airline', 'test'), ('airline', 'test', 'gt'), ('telecom', 'test', 'solo')]))",
        cwd=tmp_path,
    )  # fmt: skip
    assert tau2.stdout.strip() == "True", tau2.stdout + tau2.stderr
    # The lab (the studies, the conformance runs, the docs writers) is the checkout's: pip
    # installs none of it.
    lab = _run(installed, "python", "-c", "import lab", cwd=tmp_path)
    assert lab.returncode == 1 and "No module named 'lab'" in lab.stderr, lab.stderr


def test_loopbench_serve_eval_and_stop_work_without_make(installed: Path, tmp_path: Path) -> None:
    port = free_port()
    served = _run(
        installed, "loopbench", "serve", "--port", str(port), "--timeout", "120", "--",
        "--backend", "scripted", cwd=tmp_path,
    )  # fmt: skip
    assert served.returncode == 0, served.stdout + served.stderr
    try:
        out = tmp_path / "run.jsonl"
        ran = _run(
            installed, "loopbench", "eval", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--out", str(out), cwd=tmp_path,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(records) == 6 and {r["status"] for r in records} <= {"completed", "max_turns"}
        # The report's templates travel too.
        page = _run(installed, "loopbench", "view", str(out), "--out", "report.html", cwd=tmp_path)
        assert page.returncode == 0, page.stdout + page.stderr
        assert "<html" in (tmp_path / "report.html").read_text()
    finally:
        stopped = _run(installed, "loopbench", "stop", "local", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_loopbench_serves_a_packaged_model_on_llama_cpp_without_make(
    installed: Path, tmp_path: Path
) -> None:
    """The llama and models extras: ``loopbench serve`` on llama.cpp with a packaged model
    (SmolLM2, the smallest), and one task of the default set through ``loopbench eval``."""
    data = json.loads((ROOT / "evals" / "tasks" / "files6.json").read_text())
    data["tasks"] = data["tasks"][:1]
    tasks = tmp_path / "one.json"
    tasks.write_text(json.dumps(data))
    port = free_port()
    served = _run(
        installed, "loopbench", "serve", "--port", str(port), "--timeout", "300", "--",
        "--model", "smollm2-135m-instruct", "--ctx", "2048", cwd=tmp_path,
    )  # fmt: skip
    assert served.returncode == 0, served.stdout + served.stderr
    try:
        out = tmp_path / "run.jsonl"
        ran = _run(
            installed, "loopbench", "eval", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--tasks", str(tasks), "--max-turns", "2", "--out", str(out), cwd=tmp_path,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (record,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert (record["spec"]["backend"], record["spec"]["model"]) == (
            "llama",
            "smollm2-135m-instruct",
        )
        assert record["spec"]["model_sha256"] and record["turns"] >= 1
        assert record["status"] not in ("error", "not_run"), record["error"]
    finally:
        stopped = _run(installed, "loopbench", "stop", "local", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
