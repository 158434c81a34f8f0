"""What answers at a server's address: its models (``/models``, asked with the endpoint's
key), its software and how many requests it decodes at once, and, for an endpoint that lists no
models (many hosted providers), whether a chat path is there and takes the key. Each server as
the eval sees it is a :class:`Server`; ``discover`` finds them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from evals.errors import EvalError
from harness.client import server_said, tls_context
from harness.errors import KeyRefused
from harness.keys import KeyFrom, auth_headers, key_refused, refuses_key, scrubbed
from harness.messages_client import api_root

# Software that serves a model on a machine of the user's: priced at the loop's list price.
# Any other (a hosted provider) is priced at its own, where the price table knows the model.
LOCAL_SOFTWARE = ("loopbench", "llama.cpp", "vllm")


def private_host(base_url: str) -> bool:
    """Whether ``base_url``'s host is this machine or a private network's."""
    host = httpx.URL(base_url).host
    if host in ("localhost",) or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    # The carrier-grade range private overlays use (Tailscale) is neither global nor private.
    overlay = ipaddress.ip_network("100.64.0.0/10")
    return address.is_loopback or address.is_private or address in overlay


class Unreachable(EvalError):
    """Nothing answers at the server's address (a connection that fails, a timeout)."""


class NoListing(EvalError):
    """The server lists no models (no ``/models``, or not in the OpenAI shape)."""


def fetch_models(
    base_url: str, key: KeyFrom | None = None, api: str = "openai"
) -> list[dict[str, Any]]:
    """The server's ``/models``. A refused key is :class:`KeyRefused`; a server that answers
    but lists nothing usable is :class:`NoListing`; one that does not answer, an EvalError."""
    key = key or KeyFrom()
    secret = key.read()
    try:
        response = httpx.get(
            f"{base_url}/models", timeout=10, verify=tls_context(),
            headers=auth_headers(api, secret),
        )  # fmt: skip
    except httpx.HTTPError as exc:
        raise Unreachable(
            f"no model server answers at {base_url} ({exc.__class__.__name__}). Start one with "
            "`make serve-local` (or `make serve-scripted`), or point LLM_BASE_URL / --base-url "
            "at a running server."
        ) from exc
    if refuses_key(response.status_code, secret):
        raise key_refused(base_url, key, response.status_code, server_said(response))
    try:
        response.raise_for_status()
        data: list[dict[str, Any]] = response.json()["data"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise NoListing(
            f"{base_url}/models answered {response.status_code} without a model list"
        ) from exc
    if not data:
        raise NoListing(f"{base_url}/models lists no model")
    return data


def _get_json(url: str, client: httpx.Client | None = None) -> dict[str, Any] | None:
    try:
        if client is None:
            response = httpx.get(url, timeout=5, verify=tls_context())
        else:
            response = client.get(url, timeout=5)
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def server_software(
    base_url: str, entry: dict[str, Any], client: httpx.Client | None = None
) -> str:
    """Which server answers at ``base_url``: ours says so in /v1/models; llama.cpp's
    llama-server gives its build in /props; vLLM its version in /version."""
    if entry.get("server"):
        return str(entry["server"])
    root = base_url.removesuffix("/v1")
    owner = str(entry.get("owned_by") or "")
    if owner == "llamacpp" or "meta" in entry:
        props = _get_json(f"{root}/props", client) or {}
        build = props.get("build_info")
        return f"llama.cpp llama-server {build}" if build else "llama.cpp llama-server"
    if owner == "vllm":
        version = (_get_json(f"{root}/version", client) or {}).get("version")
        return f"vllm {version}" if version else "vllm"
    return owner or "unknown"


def server_slots(base_url: str, entry: dict[str, Any], client: httpx.Client | None = None) -> int:
    """How many requests the server decodes at once: ours says ``slots`` in /v1/models (none:
    one); llama-server gives ``total_slots`` in /props; any other server counts as one."""
    if entry.get("server") or entry.get("backend"):
        return max(1, int(entry.get("slots") or 1))
    if str(entry.get("owned_by") or "") == "llamacpp" or "meta" in entry:
        props = _get_json(f"{base_url.removesuffix('/v1')}/props", client) or {}
        return max(1, int(props.get("total_slots") or 1))
    return 1


@dataclass
class Server:
    """One OpenAI-shaped server as the eval sees it."""

    base_url: str
    entries: list[dict[str, Any]]  # its /v1/models
    software: str
    slots: int = 1  # requests it decodes at once (what the eval keeps in flight by default)
    limit: int = 1  # requests in flight at most
    busy: int = 0
    requests: int = 0
    key: KeyFrom = field(default_factory=KeyFrom)  # where its key comes from (none: no key)
    api: str = "openai"  # the wire shape its requests take
    listed: bool = True  # its models came from its /models (not only from --model)

    @property
    def local(self) -> bool:
        """Whether it serves on a machine of the user's: a known engine (ours, llama.cpp,
        vLLM), or any that lists its models at a loopback or private address (Ollama, LM
        Studio, SGLang...); else a hosted provider."""
        if self.software.startswith(LOCAL_SOFTWARE):
            return True
        return self.listed and private_host(self.base_url)

    @property
    def kind(self) -> str:
        """A short name for labels: llama-server, vllm, or what the software says."""
        if self.software.startswith("llama.cpp llama-server"):
            return "llama-server"
        return self.software.split()[0] if self.software else "unknown"

    def serves(self, model: str) -> bool:
        return any(e.get("id") == model for e in self.entries)

    def entry(self, model: str | None) -> dict[str, Any]:
        if model is None:
            return self.entries[0]
        return next((e for e in self.entries if e.get("id") == model), {"id": model})


def discover(
    base_urls: Sequence[str],
    key: KeyFrom | None = None,
    models: Sequence[str] = (),
    api: str = "openai",
) -> list[Server]:
    """Each server's models and software, asked with the endpoint's key. A server that does
    not answer is an EvalError. One that lists no models, or keeps its listing from the key
    (many hosted providers), is taken as serving the ``models`` named, once a request to its
    chat path shows the path is there and the key is taken (else :class:`KeyRefused`)."""
    key = key or KeyFrom()
    servers = []
    for url in dict.fromkeys(u.rstrip("/") for u in base_urls):
        try:
            entries = fetch_models(url, key, api)
        except (NoListing, KeyRefused) as exc:
            if not models:
                if isinstance(exc, KeyRefused):
                    raise
                raise EvalError(f"{exc}: name the model to ask for with --model") from exc
            probe_chat(url, key, api)
            listed = [{"id": m} for m in models]
            servers.append(Server(url, listed, "hosted", key=key, api=api, listed=False))
            continue
        software = server_software(url, entries[0])
        server = Server(url, entries, software, server_slots(url, entries[0]), key=key, api=api)
        servers.append(server)
    return servers


# What a chat path answers a request with an empty body when a server is there to take real
# ones: the body's refusal, or that it is busy.
SERVER_THERE = frozenset({400, 413, 415, 422, 429, 503})


def probe_chat(base_url: str, key: KeyFrom, api: str) -> None:
    """A request with an empty body to the chat path of a server that lists no models: a 404
    is no such path (an EvalError that says what to check), a refused key a
    :class:`KeyRefused`; the body's refusal or a busy answer (``SERVER_THERE``) shows a server
    there, and anything else is an EvalError. It is refused before any model runs, so it
    costs nothing."""
    secret = key.read()
    url = f"{base_url}/chat/completions" if api == "openai" else f"{api_root(base_url)}/v1/messages"
    try:
        response = httpx.post(
            url, json={}, timeout=10, verify=tls_context(), headers=auth_headers(api, secret)
        )
    except httpx.HTTPError as exc:
        what = exc.__class__.__name__
        raise Unreachable(f"no model server answers at {base_url} ({what})") from exc
    if refuses_key(response.status_code, secret):
        raise key_refused(base_url, key, response.status_code, server_said(response))
    if response.status_code in (404, 405):
        raise EvalError(
            f"no chat endpoint at {url} ({response.status_code}): check --base-url (an "
            "OpenAI-shaped one usually ends in /v1)"
        )
    if response.status_code not in SERVER_THERE:
        raise EvalError(
            f"the chat path at {url} answered {response.status_code} to an empty request "
            f"({scrubbed(server_said(response), secret)}): check --base-url"
        )
