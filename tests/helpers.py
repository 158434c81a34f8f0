from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from evals.record import RunRecord, RunSpec
from evals.record.bfcl import read_items
from evals.run.recorder import task_record
from evals.run.servers import Serving
from evals.scoring.verdict import Verdict
from evals.tasks import Task
from evals.workspace.data import WorkspaceData
from harness.state import RunState


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, to prove a folder was left untouched."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def post(url: str, body: Any) -> httpx.Response:
    """A chat request; raw text goes out declared as JSON, as a client sends it (a body not
    declared JSON is refused before it is read: tests/test_server_limits.py)."""
    raw = isinstance(body, (str, bytes))
    kwargs: dict[str, Any] = (
        {"content": body, "headers": {"Content-Type": "application/json"}}
        if raw
        else {"json": body}
    )
    # Generous: a real model on two busy cores can take a while; the tests wait for the reply,
    # never for a deadline.
    return httpx.post(f"{url}/chat/completions", timeout=300, **kwargs)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def wait_ready(base_url: str, timeout_s: float = 600.0) -> None:
    """Block until ``/health`` says 200 (the model has loaded); fail if loading failed."""
    import time

    root = base_url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = httpx.get(f"{root}/health", timeout=5).status_code
        if status == 200:
            return
        if status != 503:
            raise AssertionError(f"/health answered {status}: the model failed to load")
        time.sleep(0.1)
    raise AssertionError("the model did not load in time")


ROOT = Path(__file__).resolve().parents[1]
# ``python -m lab`` in a child process, from any folder: the lab is the checkout's, not installed.
LAB = [sys.executable, "-m", "lab"]
LAB_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run_harness(
    *args: str, url: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` as a user runs it, against the provider at ``url``."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env={**os.environ, "LLM_BASE_URL": url, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_make(*args: str, run_dir: Path, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """``make ARGS`` in the repository, with pid files kept under ``run_dir``."""
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env={**os.environ, "LOOPBENCH_RUN_DIR": str(run_dir)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


# Tool schemas that pass the JSON Schema meta-schema yet cannot check a call: both routes
# answer them with a 400.
REMOTE_REF = {
    "type": "object",
    "properties": {"path": {"$ref": "https://example.com/path.json"}},
}
DANGLING_REF = {"type": "object", "properties": {"path": {"$ref": "#/$defs/path"}}}


def tool_with(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "read", "parameters": parameters}}


def run_record(**fields: Any) -> RunRecord:
    """A run record with what a test names and plain values for the rest: what ran (``model``,
    ``label``, ``preset``...) goes to its spec, a ``database`` or an ``audit`` makes it a task
    run on the database."""
    # ``conversation`` is the record's (what happened); its spec's settings of one are not
    # asked for by name here.
    spec = {
        k: fields.pop(k) for k in list(fields) if k in RunSpec.model_fields and k != "conversation"
    }
    kept: dict[str, Any] = {k: fields.pop(k) for k in ("database", "audit") if k in fields}
    kept = {k: v for k, v in kept.items() if v is not None}
    environment = {"name": "database", **kept} if kept else {"name": "workspace"}
    return RunRecord.model_validate(
        {
            "spec": {"model": "m", **spec},
            "environment": environment,
            "question": "q",
            "status": "completed",
            **fields,
        }
    )


def record_of(state: RunState, model: str = "m", question: str = "q") -> RunRecord:
    """The record the runner builds of ``state``, a workspace task's run that no check scores."""
    task = Task.model_validate(
        {"id": "t", "question": question, "checks": [{"kind": "status", "value": "completed"}]}
    )
    return task_record(
        spec=RunSpec(model=model),
        environment=WorkspaceData(),
        task=task,
        epoch=1,
        seed=None,
        state=state,
        verdict=Verdict(checks=[], checks_hash=task.checks_hash, false_claims=[]),
        trace_path=None,
        answered_by=[],
        server_software="",
    )


def run_tau2_task(
    task: Task, client: Any, folder: Path, max_turns: int = 10, tasks: list[Task] | None = None
) -> tuple[Any, Any]:
    """One τ² task through the real conversation path (τ²'s environment opened for ``tasks``,
    default the task alone, through its pipe; ``client`` answers both agent and user): the
    task run, and the record data its environment keeps of a run that never started."""
    import asyncio

    from evals.run.settings import EvalSettings, eval_loop
    from evals.run.taskrun import run_task
    from evals.tau2.environment import Tau2Environment

    async def run() -> tuple[Any, Any]:
        opened = Tau2Environment().open(tasks or [task], None, folder)
        try:
            settings = EvalSettings(
                serving=Serving(base_url="http://unused.invalid/v1"),
                loop=eval_loop(max_turns=max_turns),
            )
            ran = await run_task(task, settings, "m", "r1", folder, folder / "keep", client, opened)
            return ran, opened.record(task, None)
        finally:
            await opened.aclose()

    return asyncio.run(run())


def flat_items(path: str | Path) -> list[dict[str, Any]]:
    """A BFCL run file's records, each as one mapping (what ran, BFCL's run and the item side
    by side), for tests that compare them with raw lines and with each other."""
    flat = []
    for record in read_items(path):
        line = record.line()
        del line["spec"], line["bfcl"]
        flat.append({**record.header, **line})
    return flat


def venv_with(root: Path, source: Path, site_line: str) -> Path:
    """A virtualenv under ``root`` with ``source`` installed by pip (offline, no dependencies,
    no build isolation), its site holding ``site_line`` as a .pth line: how it sees this
    environment's packages. Its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "loopbench-site.pth").write_text(site_line + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", str(source)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return python
