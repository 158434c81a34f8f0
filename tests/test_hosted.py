"""A hosted provider beside local ones (``tests/keyed_provider.py``: a key it checks, no model
listing, 429 with Retry-After): an eval with it as the agent, a τ² conversation with it as the
user, the report and the Inspect export, with the key only in the environment; afterwards no
byte written anywhere holds the key. A wrong key stops the eval at once, with one message."""

from __future__ import annotations

import gzip
import json
import secrets
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.cli import main as evals_main
from evals.record import read_runs
from harness.prices import list_price
from serve_local.inprocess import running_server
from tests.keyed_provider import KeyedProvider
from tests.test_tau2 import needs_tau2

# A fresh key each session: what a scan finds can only have come from this run.
KEY = f"sk-hosted-{secrets.token_hex(16)}"


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[KeyedProvider, str]]:
    provider = KeyedProvider(KEY)
    monkeypatch.setenv("HOSTED_KEY", KEY)
    for usual in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(usual, raising=False)
    with running_server(provider) as url:  # type: ignore[arg-type]
        yield provider, url


def _files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under ``root`` whose bytes (a gzip's or a zip's contents too) hold it."""
    needle = secret.encode()
    found = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data += gzip.decompress(data)
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                data += b"".join(archive.read(name) for name in archive.namelist())
        if needle in data:
            found.append(path)
    return found


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_hosted_agent_with_its_key_in_the_environment_runs_and_writes_the_key_nowhere(
    keyed: tuple[KeyedProvider, str], tmp_path: Path, api: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    provider, url = keyed
    out = tmp_path / "hosted.jsonl"
    flags = ["--api", api] if api == "anthropic" else []
    assert evals_main([
        "run", "--base-url", url, "--model", "scripted:oracle", "--api-key-env", "HOSTED_KEY",
        "--out", str(out), *flags,
    ]) == 0  # fmt: skip
    records = read_runs(out)
    assert [r.correct for r in records] == [True] * 6
    # Sent as the wire shape requires, on every request; no model listing needed.
    chats = [s for s in provider.sent if not s.path.endswith("/models")]
    if api == "openai":
        assert all(s.headers.get("authorization") == f"Bearer {KEY}" for s in chats)
    else:
        assert all(s.headers.get("x-api-key") == KEY for s in chats)
        assert all(s.headers.get("anthropic-version") for s in chats)
    # Every 429 was retried after its Retry-After, counted in the records and the summary.
    assert provider.limited >= 2
    assert sum(r.retries or 0 for r in records) == provider.limited
    assert all((r.retry_wait_s or 0) >= (r.retries or 0) * 1.0 for r in records)
    said = capsys.readouterr().out
    assert f"retries={provider.limited} (" in said
    # A model the price table does not know: its cost is unknown, never 0.
    assert {r.cost_usd for r in records} == {None}
    assert records[0].spec.prices == {"source": "unknown"}
    assert "cost=unknown" in said
    # The report and the Inspect export, then every byte written: no key.
    assert evals_main(["view", str(out), "--out", str(tmp_path / "report.html")]) == 0
    assert evals_main(["export", str(out), "--out", str(tmp_path / "inspect")]) == 0
    assert _files_holding(tmp_path, KEY) == []
    assert len(list(tmp_path.rglob("*"))) > 10  # the run file, summaries, states, traces...


@needs_tau2
def test_a_hosted_user_of_a_tau2_conversation_with_its_own_key(
    keyed: tuple[KeyedProvider, str], scripted_url: str, tmp_path: Path
) -> None:
    """The user's endpoint takes its own key (``--user-api-key-env``), apart from the agent's
    server (here a local one, which gets none)."""
    provider, url = keyed
    provider.limit_every = 2
    out = tmp_path / "tau2.jsonl"
    assert evals_main([
        "tau2", "--domain", "airline", "--split", "test", "--task-ids", "airline-2",
        "--agent", "oracle", "--base-url", scripted_url, "--user-base-url", url,
        "--user-model", "scripted:plan", "--user-api-key-env", "HOSTED_KEY",
        "--max-user-turns", "2", "--out", str(out),
    ]) == 0  # fmt: skip
    (record,) = read_runs(out)
    assert record.status == "completed" and record.conversation is not None
    assert record.conversation.user_turns == 2 and record.environment.reward is not None
    chats = [s for s in provider.sent if s.path.endswith("/chat/completions")]
    asked = [s for s in chats if json.loads(s.body).get("messages")]  # not the empty probe
    assert len(asked) == 2 + provider.limited and provider.limited >= 1
    assert all(s.headers.get("authorization") == f"Bearer {KEY}" for s in chats)
    spent = record.conversation.user_spent or {}
    assert spent.get("retries") == provider.limited
    assert _files_holding(tmp_path, KEY) == []


def test_a_wrong_key_stops_the_eval_at_once_with_one_message(
    keyed: tuple[KeyedProvider, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    provider, url = keyed
    wrong = f"sk-wrong-{secrets.token_hex(8)}"
    monkeypatch.setenv("WRONG_KEY", wrong)
    out = tmp_path / "wrong.jsonl"
    assert evals_main([
        "run", "--base-url", url, "--model", "scripted:oracle", "--api-key-env", "WRONG_KEY",
        "--out", str(out),
    ]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert url in err and "$WRONG_KEY" in err and "401" in err
    assert wrong not in err  # the provider echoed it; the message does not
    assert [s.path for s in provider.sent if not s.path.endswith("/models")] == [
        "/v1/chat/completions"
    ]  # one request, then the eval stopped
    partial = out.with_name(out.name + ".partial")
    assert not out.exists() and (not partial.exists() or partial.read_text() == "")
    # With no model named, the listing's refusal is the message, before any task runs.
    provider.sent.clear()
    assert evals_main(["run", "--base-url", url, "--api-key-env", "WRONG_KEY"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "$WRONG_KEY" in err and wrong not in err
    assert [s.path for s in provider.sent] == ["/v1/models"]
    assert _files_holding(tmp_path, wrong) == []


def test_a_key_on_the_command_line_is_refused_before_anything_runs(
    keyed: tuple[KeyedProvider, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider, url = keyed
    for flags in (["--api-key", KEY], ["--api-key-env", KEY], ["--user-api-key", KEY]):
        assert evals_main(["run", "--base-url", url, "--model", "m", *flags]) == 1
        err = capsys.readouterr().err
        assert "environment variable" in err and KEY not in err
    assert evals_main(["run", "--base-url", url, "--api-key-env", "NOT_SET_ANYWHERE"]) == 1
    assert "NOT_SET_ANYWHERE is not set" in capsys.readouterr().err
    assert provider.sent == []


def test_a_hosted_model_is_priced_at_its_providers_list_price_where_known() -> None:
    from evals.run.discovery import Server
    from evals.run.servers import price_of

    hosted = [Server("https://api.example.com/v1", [{"id": "gpt-4o-mini"}], "unknown")]
    local = [Server("http://127.0.0.1:8000/v1", [], "loopbench serve_local 0.1.0")]
    assert price_of(local, "gpt-4o-mini") is None  # the loop's list price, as before
    assert price_of(hosted, "gpt-4o-mini-2024-07-18") == {
        "input_per_million": 0.15, "output_per_million": 0.6,
        "source": "list price of gpt-4o-mini",
    }  # fmt: skip
    assert price_of(hosted, "their-model") == {"source": "unknown"}
    assert list_price("openai/gpt-4.1-mini") is not None and list_price("gpt-4o2") is None
    # A date or "latest" after a known name takes its price; another word is another model.
    assert list_price("claude-3-5-haiku-latest") is not None
    assert list_price("o3-pro") is None and list_price("gpt-5-pro") is None
    assert list_price("claude-opus-4-6") is None  # a later minor version is another model
    found = list_price("claude-opus-4-5-20251101")
    assert found is not None and found[0] == "claude-opus-4-5"
    # An engine of the user's that lists its models at a private address is priced as local.
    ollama = [Server("http://127.0.0.1:11434/v1", [{"id": "qwen2.5"}], "ollama")]
    assert price_of(ollama, "qwen2.5") is None


def test_the_usual_key_goes_only_over_https_and_a_named_one_where_it_is_pointed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OPENAI_API_KEY is read when no variable is named, and sent only to an HTTPS endpoint:
    a local server needs none, and a key never crosses a network in clear text unasked."""
    from harness.keys import key_from

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MINE", KEY)
    assert key_from("openai", None, base_url="https://api.example.com/v1").env == "OPENAI_API_KEY"
    assert key_from("openai", None, base_url="http://gpu-box:8000/v1").env is None
    assert key_from("openai", None, base_url="http://127.0.0.1:8000/v1").env is None
    assert key_from("openai", "MINE", base_url="http://gpu-box:8000/v1").env == "MINE"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert key_from("openai", None, base_url="https://api.example.com/v1").env is None


def test_a_403_without_a_key_is_not_taken_for_a_refused_key() -> None:
    from harness.keys import refuses_key

    assert refuses_key(401, None) and refuses_key(401, KEY) and refuses_key(403, KEY)
    assert not refuses_key(403, None)  # a Host guard's 403, say: the key is not the matter


def test_the_agent_and_the_user_on_one_url_keep_their_own_keys() -> None:
    from evals.run.discovery import Server
    from evals.run.servers import ServerPool
    from harness.keys import KeyFrom

    pool = ServerPool()
    url = "https://api.example.com/v1"
    agent = Server(url, [{"id": "m"}], "hosted", key=KeyFrom("AGENT_KEY"))
    user = Server(url, [{"id": "m"}], "hosted", key=KeyFrom("USER_KEY"))
    assert pool.client(agent) is not pool.client(user)
    assert pool.client(agent).key.env == "AGENT_KEY" and pool.client(user).key.env == "USER_KEY"


def test_a_url_with_no_chat_path_is_one_message_before_any_task(
    keyed: tuple[KeyedProvider, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that lists no models is asked for the model named; a wrong URL (here without
    its /v1) would then make every task an error. A request to its chat path, refused before
    any model runs, tells the two apart first."""
    _, url = keyed
    root = url.removesuffix("/v1")
    assert (
        evals_main(
            [
                "run",
                "--base-url",
                root,
                "--model",
                "scripted:oracle",
                "--api-key-env",
                "HOSTED_KEY",
                "--out",
                str(tmp_path / "r.jsonl"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert f"no chat endpoint at {root}/chat/completions (404)" in err
    assert (
        not (tmp_path / "r.jsonl.partial").exists()
        or not (tmp_path / "r.jsonl.partial").read_text()
    )


def test_several_models_of_a_server_that_lists_none(
    keyed: tuple[KeyedProvider, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, url = keyed
    monkeypatch.chdir(tmp_path)  # one run file per model, under ./results/runs
    provider.limit_every = 1000
    tasks = tmp_path / "one.yaml"
    tasks.write_text(
        "name: one\ntasks:\n  - id: count\n    question: How many files are there?\n"
        "    checks: [{kind: contains, value: '3'}]\n"
    )
    assert evals_main(["run", "--base-url", url, "--models", "scripted:oracle,scripted:plan",
                       "--api-key-env", "HOSTED_KEY", "--tasks", str(tasks),
                       "--label", "two"]) == 0  # fmt: skip
    asked = {
        json.loads(s.body)["model"]
        for s in provider.sent
        if s.path.endswith("/completions") and json.loads(s.body).get("messages")
    }
    assert asked == {"scripted:oracle", "scripted:plan"}
    assert len(list((tmp_path / "results" / "runs").glob("*-two-scripted-*.jsonl"))) == 2


def test_a_chat_path_that_answers_otherwise_than_a_server_would_is_no_server() -> None:
    """Only the body's refusal (or a busy answer) shows a server behind a path that lists no
    models: a 403 to a request without a key (a Host guard, say) or a 500 is said at once,
    not taken for a hosted model whose every task then fails."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from evals.errors import EvalError
    from evals.run.discovery import discover

    async def guarded(_: object) -> JSONResponse:
        return JSONResponse({"error": {"message": "Host not allowed"}}, status_code=403)

    app = Starlette(routes=[Route("/v1/chat/completions", guarded, methods=["POST"])])
    with (
        running_server(app) as url,  # type: ignore[arg-type]
        pytest.raises(EvalError, match="answered 403 to an empty request"),
    ):
        discover([url], models=["m"])
