from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evals.database.sql.answer_key import answer as sql_answer
from harness.workspace import Workspace, create_workspace
from serve_local.app import create_app
from serve_local.backends.scripted import ScriptedBackend
from serve_local.inprocess import running_server
from serve_local.models import SMOLLM2, resolve
from tests.models_fixtures import model_server

if TYPE_CHECKING:
    from serve_local.backends.transformers import TransformersBackend

# Test scratch (tmp_path) in memory where the machine has a tmpfs: every run fsyncs its state
# after each step and its records after each task, as it must on a user's disk; in tests that
# is thousands of disk flushes that prove nothing. Child processes keep the usual TMPDIR.
SHM = Path("/dev/shm")
if SHM.is_dir() and os.access(SHM, os.W_OK) and "PYTEST_TMP_ON_DISK" not in os.environ:
    tempfile.tempdir = str(SHM)


# Modules whose tests load a model (llama.cpp, transformers, llama-server) or start the one
# PostgreSQL: `make test` runs them one at a time after the rest (``-m serial``), so no two
# model processes share the cores (two llama processes on two cores slow each other several
# times over), and runs the rest, which load none, in two processes (``-m "not serial"``).
# A model test left off this list still passes, only slower for sharing the cores.
SERIAL = frozenset(
    {
        "test_agents_sdk", "test_bench_draft", "test_bench_ladder", "test_cli",
        "test_constrained_calls", "test_draft", "test_install", "test_llama_backend",
        "test_llama_server", "test_models", "test_sampling", "test_slots", "test_sql_postgres",
        "test_tool_schemas", "test_transformers_backend",
    }
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in SERIAL:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(autouse=True)
def _no_accidental_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets to choose a provider fails fast instead of reaching a real one."""
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")


@pytest.fixture(scope="session")
def scripted_url() -> Iterator[str]:
    # The oracle answers the sql source too, from the answer key the eval hands it.
    with running_server(create_app(ScriptedBackend(answer_keys=[sql_answer]))) as url:
        yield url


@pytest.fixture(scope="session")
def smol_transformers() -> Iterator[tuple[TransformersBackend, str]]:
    """The packaged SmolLM2 through the transformers backend, behind a real server: loading it
    (dequantizing the GGUF) costs far more than any test that asks it, so they share one."""
    from serve_local.backends.transformers import TransformersBackend

    backend = TransformersBackend(resolve(SMOLLM2), n_ctx=1024)
    with model_server(backend) as url:
        yield backend, url


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return create_workspace(tmp_path / "workspace")
