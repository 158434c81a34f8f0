"""``python -m evals``: each subcommand registered by its own module, every help text renders,
and an error raised on purpose is one line and exit status 1, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.cli import main, parser
from lab.cli import main as lab_main
from lab.cli import parser as lab_parser
from tests.helpers import ROOT


def test_every_subcommand_has_a_handler_and_a_help_that_renders(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = next(a for a in parser()._subparsers._group_actions)  # type: ignore[union-attr]
    lab = next(a for a in lab_parser()._subparsers._group_actions)  # type: ignore[union-attr]
    assert {"run", "bfcl", "tau2", "compare", "power", "view", "export"} <= set(table.choices)
    assert {"sweep", "rescore", "bench", "tau2-report", "quoted"} <= set(lab.choices)
    # The lab's commands write this repository's docs and committed results: none is the
    # product's, and no name means two things.
    assert not set(table.choices) & set(lab.choices)
    for commands in (table, lab):
        for name, sub in commands.choices.items():
            assert sub.get_default("handler") is not None, name
            sub.format_help()
    for run, said in ((main, "power"), (lab_main, "rescore")):
        with pytest.raises(SystemExit) as done:
            run(["--help"])
        assert done.value.code == 0
        assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["compare", "nope.jsonl"], "evals compare: nope.jsonl: no such run file or folder"),
        (["run", "--epochs", "0"], "evals run: --epochs must be at least 1"),
        (["run", "--preset", "nope"], "evals run: no preset 'nope'; the presets are: no-helpers"),
        (["run", "--out", "tests"], "evals run: --out tests: name the run file to write"),
        (["run", "--out", "mine.json"], "evals run: --out mine.json: name the run file to write"),
    ],
)
def test_an_error_is_one_line_and_status_1(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["rescore", "nope"], "lab rescore: nope: no such run file or folder"),
        (["sweep"], "lab sweep: name the presets"),
    ],
)
def test_a_lab_error_is_one_line_and_status_1(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lab_main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


def test_a_run_file_with_a_line_that_is_no_record_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a"}\n[1, 2]\n')
    assert main(["compare", str(bad)]) == 1
    assert f"{bad}, line 2: not a JSON object" in capsys.readouterr().err


def test_a_task_id_that_is_a_path_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An id of ``../`` parts once wrote a task's files outside the run folder."""
    import json

    tasks = tmp_path / "sets" / "escaping.json"
    tasks.parent.mkdir()
    task = {
        "id": "../../outside",
        "question": "Which?",
        "checks": [{"kind": "contains", "value": "x"}],
    }
    tasks.write_text(json.dumps({"name": "escaping", "tasks": [task]}))
    out = tmp_path / "sets" / "runs" / "run.jsonl"
    argv = ["run", "--tasks", str(tasks), "--base-url", "http://127.0.0.1:9/v1", "--out", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "tasks.0.id" in err and "names the task's folders" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["escaping.json", "sets"]


def test_compare_of_every_committed_run_with_plots_prints_no_warning(tmp_path: Path) -> None:
    """What ``make eval`` runs after each eval: nothing the user did not ask for reaches the
    terminal, however many runs the plots' legends hold."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["compare", str(ROOT / "results" / "runs"), "--plots", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"task_wall.png", "turn_latency.png"}


def test_the_loopbench_command_is_installed_and_leads_to_each_verb(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One command for what users do: installed beside the interpreter by the package's
    entry point, its help lists the verbs, eval is python -m evals run, serve takes the
    server's own flags after its own, and any other evals subcommand runs by its name."""
    import subprocess
    import sys

    from evals import loopbench

    script = Path(sys.executable).parent / "loopbench"
    assert script.exists(), "pip install -e . installs the loopbench entry point"
    shown = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    for verb, _ in loopbench.VERBS:
        assert f"  {verb} " in shown.stdout
    with pytest.raises(SystemExit) as exited:
        loopbench.main(["eval", "--help"])
    shown_eval = capsys.readouterr().out
    assert exited.value.code == 0 and "--policy" in shown_eval
    assert shown_eval.startswith("usage: loopbench eval ")  # was: python -m evals run
    # An error names the command the user typed.
    assert loopbench.main(["eval", "--epochs", "0"]) == 1
    assert "loopbench eval: --epochs must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        loopbench.main(["serve", "--help"])
    assert "--port" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        loopbench.main(["mcp", "serve", "--help"])
    assert "--workspace" in capsys.readouterr().out
    assert loopbench.main(["check-tasks", "evals/tasks/files6.json"]) == 0
    # An unknown verb is argparse's error, naming the choices.
    with pytest.raises(SystemExit) as exited:
        loopbench.main(["nonsense"])
    assert exited.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_loopbench_eval_and_make_eval_run_the_environments_default_preset(
    scripted_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unnamed, the preset is the default of the environment the tasks run on, for
    ``loopbench eval`` and ``make eval`` alike (which named all-helps while ``loopbench eval``
    ran no-helpers); tasks on environments whose defaults differ must name one."""
    import json
    import subprocess

    from evals import loopbench
    from evals.record import read_runs

    base = ["eval", "--base-url", scripted_url, "--model", "scripted:oracle"]
    out = tmp_path / "files.jsonl"
    assert loopbench.main([*base, "--out", str(out)]) == 0
    assert {r.spec.preset.name for r in read_runs(out) if r.spec.preset} == {"all-helps"}
    sql = json.loads(Path("evals/tasks/sql-test-s1000-n60.json").read_text())
    files = json.loads(Path("evals/tasks/files6.json").read_text())
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"name": "mixed", "tasks": [files["tasks"][0], sql["tasks"][0]]}))
    capsys.readouterr()
    assert loopbench.main([*base, "--tasks", str(mixed), "--out", str(tmp_path / "m.jsonl")]) == 1
    said = capsys.readouterr().err
    assert "default presets differ (database: analyst, workspace: all-helps)" in said
    assert "name one with --preset" in said
    # make eval names no preset unless PRESET (or POLICY) is given.
    shown = subprocess.run(["make", "-n", "eval"], capture_output=True, text=True, check=True)
    (line,) = [x for x in shown.stdout.splitlines() if "loopbench eval" in x]
    assert "--preset" not in line
    named = subprocess.run(
        ["make", "-n", "eval", "PRESET=penalized"], capture_output=True, text=True, check=True
    )
    assert "loopbench eval --preset penalized" in named.stdout
