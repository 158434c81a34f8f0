"""Real servers over the real packaged models, shared by the model tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from serve_local.app import create_app
from serve_local.backends.base import Backend
from serve_local.inprocess import running_server
from tests.helpers import wait_ready


@contextmanager
def model_server(backend: Backend) -> Iterator[str]:
    with running_server(create_app(backend)) as url:
        wait_ready(url)
        yield url
