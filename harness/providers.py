"""The provider for a wire shape, by name: ``openai`` (chat completions) or ``anthropic``
(Messages). Both sit behind the one interface the loop calls, ``chat(...) -> ModelReply``."""

from __future__ import annotations

from typing import Any, Literal

from harness.client import ProviderClient
from harness.messages_client import MessagesClient, api_root

Api = Literal["openai", "anthropic"]
APIS: tuple[Api, ...] = ("openai", "anthropic")


def provider(api: str, base_url: str | None = None, **options: Any) -> ProviderClient:
    if api == "anthropic":
        return MessagesClient(base_url, **options)
    if api == "openai":
        return ProviderClient(base_url, **options)
    raise ValueError(f"unknown wire shape {api!r}; use one of: {', '.join(APIS)}")


def base_url_for(api: str, base_url: str) -> str:
    """The URL that lists the server's models (``/v1``): a Messages base URL may be the root."""
    base_url = base_url.rstrip("/")
    return f"{api_root(base_url)}/v1" if api == "anthropic" else base_url
