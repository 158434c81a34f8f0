"""llama.cpp's own server as a peer: built from the installed llama-cpp-python's sources
(``make peer-llama-server``, which ``make test`` runs first), serving the packaged GGUF, and
the eval running against it unchanged, its records naming the software that answered."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evals.record import read_records
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from harness.presets import preset
from serve_local import daemon, llama_server
from serve_local.models import QWEN_CODER
from serve_local.process import free_port
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    not llama_server.binary().exists(),
    reason="llama-server is not built: `make peer-llama-server` (make test builds it)",
)


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    cmd = llama_server.command(QWEN_CODER, port, threads=2, slots=2)
    log = tmp_path_factory.mktemp("peer") / "llama-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        while daemon.health(port) != 200:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_binary_is_the_installed_version_s() -> None:
    found = subprocess.run(
        [sys.executable, "-m", "serve_local.llama_server", "path"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert found.returncode == 0
    assert Path(found.stdout.strip()) == llama_server.binary()
    assert llama_server.installed_version() in found.stdout


def test_serves_the_packaged_gguf_under_its_name(peer: str) -> None:
    models = httpx.get(f"{peer}/models", timeout=10).json()["data"]
    assert models[0]["id"] == QWEN_CODER
    props = httpx.get(peer.removesuffix("/v1") + "/props", timeout=10).json()
    assert props["total_slots"] == 2 and props["build_info"]


async def test_the_eval_runs_against_it_unchanged(peer: str, tmp_path: Path) -> None:
    tasks = json.loads((ROOT / "evals" / "tasks" / "files6.json").read_text())
    tasks["tasks"] = tasks["tasks"][:2]
    task_file = tmp_path / "two.json"
    task_file.write_text(json.dumps(tasks))
    settings = EvalSettings(
        serving=Serving(base_url=peer, concurrency=2),
        tasks=task_file,
        preset=preset("penalized"),
        out=tmp_path / "peer.jsonl",
        loop=eval_loop(max_turns=1),
    )
    records = read_records(await run_eval(settings, echo=print))
    assert [r["task_id"] for r in records] == ["timeout", "count"]
    for record in records:
        assert record["server_software"].startswith("llama.cpp llama-server b")
        assert record["spec"]["backend"] == "llama-server"
        assert record["spec"]["label"] == f"{QWEN_CODER}@llama-server"
        assert record["answered_by"] == [peer]
        assert record["status"] in {"completed", "max_turns_exceeded"}  # no failure
        # one turn, and one more to conclude at the limit, each within the preset's cap
        assert 1 <= record["turns"] <= 2 and record["completion_tokens"] > 0
        assert record["completion_tokens"] <= 256 * record["turns"]
