"""What the server refuses before a route sees a request, against the real server process
(``python -m serve_local``, its own command line): bodies over the limit (413, before they are
read), content types a web page can send without asking (415), foreign Host names while bound
to loopback (403), numbers too long to read (400); and /health answering while a long request
is being counted."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_local.app import create_app
from serve_local.backends import scripted
from serve_local.backends.scripted import ScriptedBackend
from serve_local.guard import Limits, host_name
from serve_local.inprocess import running_server
from serve_local.process import free_port
from tests.helpers import wait_ready

ROOT = Path(__file__).resolve().parents[1]
CHAT = {"model": "scripted:plan", "messages": [{"role": "user", "content": "Which file?"}]}
MESSAGES = {**CHAT, "max_tokens": 100}
ROUTES = ["/v1/chat/completions", "/v1/messages"]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The scripted server as ``make serve-scripted`` starts it, with a 4 MB body limit."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "serve_local", "--backend", "scripted", "--port", str(port),
         "--max-body-mb", "4", "--log-level", "warning"],
        cwd=ROOT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        while True:  # until the process listens (or ends)
            assert process.poll() is None, "the server ended before it listened"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                threading.Event().wait(0.05)
        wait_ready(f"{url}/v1", timeout_s=60)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _is_error_shaped(route: str, body: dict[str, Any], code: str) -> bool:
    if route == "/v1/messages":
        return body["type"] == "error" and bool(body["error"]["message"])
    return body["error"]["code"] == code and bool(body["error"]["message"])


@pytest.mark.parametrize("route", ROUTES)
def test_a_20_mb_body_is_refused_with_413_and_the_server_goes_on(server: str, route: str) -> None:
    padding = "x" * (20 * 1024 * 1024)
    body = {**MESSAGES, "messages": [{"role": "user", "content": padding}]}
    refused = httpx.post(f"{server}{route}", json=body, timeout=60)
    assert refused.status_code == 413
    assert _is_error_shaped(route, refused.json(), "request_too_large")
    assert "4 MB" in refused.text and "--max-body-mb" in refused.text
    assert httpx.get(f"{server}/health", timeout=10).status_code == 200
    assert httpx.post(f"{server}{route}", json=MESSAGES, timeout=30).status_code == 200


def _raw(server: str, request: bytes) -> bytes:
    """Send bytes as they are, and read what comes back before the connection closes."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
            if b"\r\n\r\n" in reply and b"}" in reply:
                break
    return reply


def test_a_content_length_past_the_limit_is_refused_before_any_body_arrives(server: str) -> None:
    """``Content-Length: 1000000000`` and no body: answered at once, not held open."""
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
    )
    reply = _raw(server, head.encode())
    assert reply.startswith(b"HTTP/1.1 413")
    assert b"request_too_large" in reply


def test_a_body_sent_without_a_length_is_cut_off_at_the_limit(server: str) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"model": "scripted:plan", "messages": [{"role": "user", "content": "'
        for _ in range(64):
            yield b"x" * (128 * 1024)
        yield b'"}]}'

    refused = httpx.post(
        f"{server}/v1/chat/completions",
        content=chunks(),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_body_that_is_not_declared_json_is_refused_with_415(
    server: str, route: str, content_type: str | None
) -> None:
    """A web page can POST text/plain or a form to 127.0.0.1 without the browser asking the
    server first (a "simple" request); JSON it cannot."""
    headers = {"Content-Type": content_type} if content_type else {}
    refused = httpx.post(
        f"{server}{route}", content=json.dumps(MESSAGES), headers=headers, timeout=30
    )
    assert refused.status_code == 415
    assert _is_error_shaped(route, refused.json(), "unsupported_media_type")
    charset = {"Content-Type": "application/json; charset=utf-8"}
    accepted = httpx.post(f"{server}{route}", content=json.dumps(MESSAGES), headers=charset)
    assert accepted.status_code == 200


@pytest.mark.parametrize("route", [*ROUTES, "/v1/models", "/health"])
def test_a_foreign_host_name_is_refused_while_bound_to_loopback(server: str, route: str) -> None:
    """What DNS rebinding looks like from here: a page's own name resolved to 127.0.0.1."""
    headers = {"Host": "attacker.example:8000"}
    if route.startswith("/v1/") and route != "/v1/models":
        refused = httpx.post(f"{server}{route}", json=MESSAGES, headers=headers, timeout=30)
    else:
        refused = httpx.get(f"{server}{route}", headers=headers, timeout=30)
    assert refused.status_code == 403 and "--allow-host" in refused.text
    for name in ("localhost", "127.0.0.1"):
        port = server.rsplit(":", 1)[1]
        assert httpx.get(f"{server}/health", headers={"Host": f"{name}:{port}"}).status_code == 200


def test_the_host_check_follows_the_address_and_allow_host() -> None:
    assert Limits.for_address("127.0.0.1").allowed_hosts == {"127.0.0.1", "localhost", "::1"}
    assert Limits.for_address("0.0.0.0").allowed_hosts is None  # served to the network
    assert "box.lan" in (Limits.for_address("127.0.0.1", ["box.lan"]).allowed_hosts or ())
    assert Limits.for_address("127.0.0.1", ["*"]).allowed_hosts is None
    assert [host_name(h) for h in ("127.0.0.1:8000", "[::1]:80", "LocalHost", "::1")] == [
        "127.0.0.1", "::1", "localhost", "::1"
    ]  # fmt: skip


@pytest.mark.parametrize("route", ROUTES)
def test_an_integer_too_long_to_read_is_a_400(server: str, route: str) -> None:
    body = json.dumps(MESSAGES)[:-1] + ', "seed": ' + "9" * 5000 + "}"
    refused = httpx.post(
        f"{server}{route}", content=body, headers={"Content-Type": "application/json"}
    )
    assert refused.status_code == 400, refused.text
    assert _is_error_shaped(route, refused.json(), "invalid_json")
    assert "too long" in refused.text


def test_health_answers_while_a_long_request_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Token counting is held in its worker thread while /health is asked: were it on the
    event loop, /health would wait for it."""
    entered, release = threading.Event(), threading.Event()
    real = scripted.prompt_tokens

    def held(request: Any) -> int:
        entered.set()
        release.wait(timeout=60)
        return real(request)

    monkeypatch.setattr(scripted, "prompt_tokens", held)
    with running_server(create_app(ScriptedBackend())) as url:
        replies: list[httpx.Response] = []
        asking = threading.Thread(
            target=lambda: replies.append(httpx.post(f"{url}/chat/completions", json=CHAT))
        )
        asking.start()
        try:
            assert entered.wait(timeout=30)
            health = httpx.get(f"{url.removesuffix('/v1')}/health", timeout=10)
            assert health.status_code == 200 and not replies
        finally:
            release.set()
            asking.join(timeout=30)
    assert replies[0].status_code == 200
