"""A backend declares its own options: the server's parser is built from every backend's, the
chosen backend's reach its factory at their defaults where not given, and an option of
another backend is refused with the names of those that take it."""

from __future__ import annotations

import sys

import httpx
import pytest

from serve_local.__main__ import arguments
from serve_local.app import create_app
from serve_local.backends import registry
from serve_local.backends.registry import build
from serve_local.errors import StartupError
from serve_local.inprocess import running_server
from serve_local.process import serve_command


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry line a new backend adds."""
    monkeypatch.setattr(registry, "BACKENDS", {**registry.BACKENDS, "echo": "tests.echo_backend"})


def test_a_new_backend_is_one_module_and_one_registry_line(with_echo: None) -> None:
    args = arguments(["--backend", "echo", "--greeting", "good day", "--shout"])
    with running_server(create_app(build(args))) as url:
        (entry,) = httpx.get(f"{url}/models", timeout=30).json()["data"]
    assert (entry["backend"], entry["greeting"]) == ("echo", "GOOD DAY")
    # Not given: the backend's own default.
    assert build(arguments(["--backend", "echo"])).models()[0]["greeting"] == "hello"


def test_an_option_of_another_backend_is_refused_naming_who_takes_it(with_echo: None) -> None:
    with pytest.raises(StartupError, match="--greeting is an option of the echo backend, not of"):
        arguments(["--backend", "scripted", "--greeting", "hi"])
    with pytest.raises(
        StartupError, match="--ctx is an option of the llama and transformers backends, not of echo"
    ):
        arguments(["--backend", "echo", "--ctx", "2048"])
    # Each model backend takes what it declares, at its defaults.
    llama = arguments(["--backend", "llama"])
    assert (llama.ctx, llama.draft, llama.tool_grammar, llama.no_prefix_cache) == (
        4096,
        "off",
        "lazy",
        False,
    )
    assert arguments(["--backend", "transformers", "--device", "auto"]).device == "auto"


def test_the_help_groups_each_backends_options(
    with_echo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        arguments(["--help"])
    shown = capsys.readouterr().out
    assert "options of the echo backend:" in shown and "--greeting" in shown
    assert "options of the transformers backend:" in shown and "--device" in shown
    assert "backend only" not in shown


def test_a_studys_server_command_is_one_the_server_reads() -> None:
    """Every study builds the server's command line with serve_command: keywords become the
    flags the chosen backend declares, switches given only when True."""
    command = serve_command(
        "llama", model="m", threads=2, tool_grammar="off", no_prefix_cache=True,
        written_replies=False, log_level="warning",
    )  # fmt: skip
    assert command[:5] == [sys.executable, "-m", "serve_local", "--backend", "llama"]
    assert "--written-replies" not in command
    args = arguments(command[3:])
    assert (args.model, args.threads, args.tool_grammar, args.no_prefix_cache) == (
        "m",
        2,
        "off",
        True,
    )
    assert arguments(serve_command("scripted", latency_ms=5)[3:]).latency_ms == 5.0


def test_slots_belong_to_the_llama_backend_and_exclude_drafting() -> None:
    assert arguments(["--backend", "llama", "--slots", "4"]).slots == 4
    assert arguments(["--backend", "llama"]).slots == 1
    with pytest.raises(StartupError, match="--slots is an option of the llama backend"):
        arguments(["--backend", "transformers", "--slots", "4"])
    with pytest.raises(SystemExit):  # argparse: must be at least 1
        arguments(["--backend", "llama", "--slots", "0"])
    from serve_local.models import ModelUnavailable

    with pytest.raises(ModelUnavailable, match="--draft works with one slot only"):
        build(arguments(["--backend", "llama", "--slots", "2", "--draft", "prompt-lookup"]))
