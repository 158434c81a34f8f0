"""Registries open to other packages: a plugin distribution (examples/plugins/loopbench-clock),
installed by pip into a virtualenv of its own, adds an environment, a loop setting and a
backend through entry points, and ``python -m evals run`` there runs an eval on its
environment with its setting; its entries that fail to load are named in warnings and the
rest works. The virtualenv sees this project's packages (and their entry points) through a
site directory, so nothing is downloaded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_local.inprocess import running_server
from tests.fake_provider import answer, calls, server_app, turn_of
from tests.helpers import venv_with

PLUGIN = Path(__file__).parent.parent / "examples" / "plugins" / "loopbench-clock"
ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtualenv with the plugin installed by pip (from a copy, so its build leaves nothing
    in the repository); this project's packages come from the current environment's site."""
    root = tmp_path_factory.mktemp("plugin-venv")
    ours = sysconfig.get_paths()["purelib"]
    source = shutil.copytree(PLUGIN, root / "loopbench-clock")
    python = venv_with(root, source, f"import site; site.addsitedir({ours!r})")
    yield python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], capture_output=True, text=True, cwd=cwd, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_a_plugin_adds_an_environment_and_a_setting_and_an_eval_runs_on_them(
    venv: Path, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if turn_of(request) == 0:
            return httpx.Response(200, json=calls(("c1", "read_clock", "{}")))
        return httpx.Response(200, json=answer("IT IS 16:41."))

    tasks = tmp_path / "clock.yaml"
    tasks.write_text(
        "name: clock\ntasks:\n  - id: t1\n    question: What time is it?\n"
        "    clock: {zone: Asia/Ho_Chi_Minh}\n    checks: [{kind: contains, value: '16:41'}]\n"
    )
    out = tmp_path / "run.jsonl"
    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        ran = _run(
            venv, "-m", "evals", "run", "--tasks", str(tasks), "--base-url", url,
            "--model", "fake", "--preset", "shouting", "--out", str(out), cwd=tmp_path,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    # The plugin's environment held the task: its tool and intro; its setting in the prompt.
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["read_clock"]
    system = seen[0]["messages"][0]["content"]
    assert "You read the wall clock" in system and "Answer in capital letters." in system
    assert seen[1]["messages"][-1]["content"] == "It is 16:41."
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    # The record names the distribution the environment came from (what a reader installs).
    assert record["environment"] == {
        "name": "clock",
        "zone": "Asia/Ho_Chi_Minh",
        "reads": 1,
        "package": "loopbench-clock",
    }
    assert record["correct"] is True
    # The plugin's preset, with the plugin's setting in it.
    assert record["spec"]["preset"]["name"] == "shouting"
    assert record["spec"]["preset"]["settings"]["shout"] is True
    # Its figures, in the run file's summary.
    summary = json.loads((tmp_path / "run.summary.json").read_text())
    assert summary["clock"] == {"runs": 1, "read": 1, "reads": 1}
    # The entries that fail to load, or take a name already registered, are named, one warning
    # each, and the rest worked.
    for group in ("loopbench.environments", "loopbench.settings"):
        assert f"{group}: plugin 'broken'" in ran.stderr, ran.stderr
    assert "plugin 'clock-again'" in ran.stderr and "'clock' is already registered" in ran.stderr
    assert "plugin 'shout-again'" in ran.stderr and "taken: 'shout'" in ran.stderr
    # A plugin that exits as it is imported is named with its package, in each group whose
    # modules the command imports, and the command goes on. An eval imports no backend's
    # module: it asks its servers over HTTP (a backend that exits: the next test).
    for group in ("loopbench.environments", "loopbench.settings"):
        assert f"{group}: plugin 'exits' (loopbench_clock.exits" in ran.stderr
    assert ran.stderr.count("from loopbench-clock) left out: SystemExit: the clock plugin") == 2
    # Without the flag the setting is at its default, and the prompt has no such rule.
    listed = _run(venv, "-m", "evals", "run", "--help", cwd=tmp_path)
    assert "--shout" in listed.stdout


def test_a_plugin_adds_a_backend_with_its_own_options(venv: Path, tmp_path: Path) -> None:
    shown = _run(venv, "-m", "serve_local", "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "options of the clock backend:" in shown.stdout and "--clock-face" in shown.stdout
    assert "loopbench.backends: plugin 'broken'" in shown.stderr
    assert "plugin 'scripted' (loopbench_clock.backend, from loopbench-clock) left out" in (
        shown.stderr
    )
    assert "plugin 'exits' (loopbench_clock.exits, from loopbench-clock) left out: SystemExit" in (
        shown.stderr
    )
    # A backend left out is no choice: asked for, it is refused as unknown.
    refused = _run(venv, "-m", "serve_local", "--backend", "broken", cwd=tmp_path)
    assert refused.returncode == 2 and "invalid choice: 'broken'" in refused.stderr
    built = _run(
        venv, "-c",
        "from serve_local.__main__ import arguments; from serve_local.backends.registry import "
        "build; print(build(arguments(['--backend', 'clock', '--clock-face', 'dial'])).models())",
        cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "'backend': 'clock'" in built.stdout and "'face': 'dial'" in built.stdout


def test_a_plugin_loads_whichever_module_is_imported_first(venv: Path, tmp_path: Path) -> None:
    """A plugin's own modules imported before the registries (its tests, a user's script) do
    not leave it half-loaded: the packages they import load no registry."""
    found = _run(
        venv, "-c",
        "import loopbench_clock.environment, loopbench_clock.shout\n"
        "from evals.registry import ENVIRONMENTS\n"
        "from harness.policies.registry import SETTINGS\n"
        "print(sorted(e.name for e in ENVIRONMENTS), 'shout' in SETTINGS)",
        cwd=tmp_path,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert "'clock'" in found.stdout and found.stdout.strip().endswith("True"), found.stdout
    assert "partially initialized" not in found.stderr, found.stderr


def test_a_bare_interpreter_reads_a_plugins_task_and_run_files_and_lists_what_loaded(
    venv: Path, tmp_path: Path
) -> None:
    """The meaning of a file does not hang on what was imported first: ``load_tasks`` and
    ``read_runs``, imported alone, know the plugin's task field and record data (the task file
    was refused with "Extra inputs are not permitted" and the record read as ``OtherData``
    unless the environments' registry happened to be imported); ``loopbench plugins`` lists
    each entry point, the distribution it came from, and why one was left out."""
    tasks = tmp_path / "clock.yaml"
    tasks.write_text(
        "name: clock\ntasks:\n  - id: t1\n    question: What time is it?\n"
        "    clock: {zone: UTC}\n    checks: [{kind: contains, value: '16:41'}]\n"
    )
    from tests.helpers import run_record

    record = run_record(task_id="t1").line()
    record["environment"] = {"name": "clock", "zone": "UTC", "reads": 1}
    runs = tmp_path / "clock.jsonl"
    runs.write_text(json.dumps(record) + "\n")
    read = _run(
        venv, "-c",
        "import sys\n"
        "from evals.tasks import load_tasks\n"
        "from evals.record import read_runs\n"
        f"task = load_tasks({str(tasks)!r}).tasks[0]\n"
        "print(sorted(task.model_dump(exclude_none=True)))\n"
        f"print(type(read_runs({str(runs)!r})[0].environment).__name__)\n",
        cwd=tmp_path,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    fields, data = read.stdout.strip().splitlines()
    assert "'clock'" in fields and data == "ClockData", read.stdout

    listed = _run(venv, "-m", "evals.loopbench", "plugins", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    groups: dict[str, dict[str, str]] = {}
    for line in listed.stdout.splitlines():
        if not line.startswith("  "):
            group = groups.setdefault(line, {})
        else:
            group[line.split()[0]] = line
    assert list(groups) == [
        "loopbench.environments", "loopbench.settings", "loopbench.presets", "loopbench.backends"
    ]  # fmt: skip
    preset = groups["loopbench.presets"]
    assert preset["shouting"].endswith("from loopbench-clock: loaded")
    assert "a preset named 'all-helps' is already registered" in preset["taken"]
    env, backend = groups["loopbench.environments"], groups["loopbench.backends"]
    assert env["clock"].endswith("from loopbench-clock: loaded")
    assert "loopbench_clock.environment:ClockEnvironment" in env["clock"]
    assert env["exits"].endswith("left out: SystemExit: the clock plugin gave up")
    assert "left out: ValueError: an environment named 'clock'" in env["clock-again"]
    assert "left out: ModuleNotFoundError" in groups["loopbench.settings"]["broken"]
    assert backend["clock"].endswith("loaded")
    assert backend["scripted"].endswith("left out: a backend named 'scripted' is registered")


def test_help_and_stop_import_no_plugin_and_a_record_of_a_missing_one_says_what_to_install(
    venv: Path, tmp_path: Path
) -> None:
    """``loopbench --help`` and ``stop`` wait for no plugin (one that exits as it is imported
    used to end them both with its own message); ``view`` of a record whose environment's
    plugin is not installed names the environment and the distribution to install."""
    for verb in (["--help"], ["stop"]):
        shown = _run(venv, "-m", "evals.loopbench", *verb, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "plugin" not in shown.stderr
    listed = _run(venv, "-m", "evals.loopbench", "eval", "--help", cwd=tmp_path)
    assert listed.returncode == 0 and "--shout" in listed.stdout
    assert "plugin 'exits'" in listed.stderr and "from loopbench-clock" in listed.stderr

    from tests.helpers import run_record

    record = run_record(task_id="t1").line()
    record["environment"] = {"name": "clock", "zone": "UTC", "reads": 1,
                             "package": "loopbench-clock"}  # fmt: skip
    runs = tmp_path / "clock.jsonl"
    runs.write_text(json.dumps(record) + "\n")
    viewed = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "evals", "view", str(runs),
         "--out", str(tmp_path / "view.html")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert viewed.returncode == 1, viewed.stderr
    assert "the environment 'clock'" in viewed.stderr
    assert "pip install loopbench-clock" in viewed.stderr
    assert "Traceback" not in viewed.stderr
