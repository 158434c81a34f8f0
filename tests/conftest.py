from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.workspace import Workspace, create_workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server


@pytest.fixture(autouse=True)
def _no_accidental_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets to choose a provider fails fast instead of reaching a real one."""
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")


@pytest.fixture(scope="session")
def scripted_url() -> Iterator[str]:
    with running_server(create_app(ScriptedBackend())) as url:
        yield url


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return create_workspace(tmp_path / "workspace")
