"""MCP both ways, through real servers over stdio: tools from a server go through every control
of the loop, a server at fault ends its task as an error (never a wrong answer) and leaves no
process behind, and this project's tools served over MCP work for clients that are not ours."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.mcp.data import McpData
from evals.record import read_runs
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.tasks import load_tasks
from harness.config import LoopConfig
from harness.errors import ToolServerFailed
from harness.loop import run_loop
from harness.mcp.servers import MCP_BIN, ServerConfig, open_servers
from harness.setup import Setup
from harness.state import new_run
from harness.tools import ToolContext
from harness.workspace import Workspace, create_workspace
from serve_local.inprocess import running_server
from tests.fake_provider import answer, by_turn, calls, fake_client, server_app, turn_of

FAULTY = Path(__file__).parent / "mcp_servers" / "faulty.py"
LOOKUP = ("c1", "lookup", '{"key": "a"}')


def faulty(mode: str, pids: Path) -> ServerConfig:
    return ServerConfig(
        command=sys.executable, args=[str(FAULTY), mode], env={"FAULTY_PID_FILE": str(pids)}
    )


def alive(pids: Path) -> list[int]:
    """The processes a faulty server wrote down that still run (a zombie is gone)."""
    found = []
    for pid in (int(p) for p in pids.read_text().split()) if pids.exists() else []:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state != "Z":
            found.append(pid)
    return found


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pids"
    yield path
    for pid in alive(path):  # a failing test must not leave a server running
        os.kill(pid, 9)


async def _run(mode: str, tmp_path: Path, pids: Path, **config: Any) -> Any:
    """One run whose model calls ``lookup`` on a faulty server, then answers."""
    workspace = create_workspace(tmp_path / "ws", files={})
    state = new_run("fake", "What is the answer?")
    client = fake_client(by_turn([(200, calls(LOOKUP)), (200, answer("It is 42."))]))
    servers = {"faulty": faulty(mode, pids)}
    async with open_servers(servers, {"workspace": str(workspace.root)}, tmp_path / "logs") as s:
        await run_loop(state, client, Setup(s.tools, workspace), LoopConfig(**config))
    assert alive(pids) == []
    return state


async def test_a_result_with_is_error_is_a_tool_error_the_model_reads(
    tmp_path: Path, pids: Path
) -> None:
    state = await _run("tool_error", tmp_path, pids)
    assert state.status == "completed" and not state.tool_server_failed
    assert state.tool_log[0].ok is False and state.tool_log[0].error == "no such key"
    assert any(m["role"] == "tool" and "no such key" in m["content"] for m in state.messages)


async def test_megabytes_are_cut_to_the_loops_cap(tmp_path: Path, pids: Path) -> None:
    state = await _run("megabytes", tmp_path, pids, tool_result_cap_bytes=10_000)
    (result,) = [m["content"] for m in state.messages if m["role"] == "tool"]
    assert len(result) < 10_200 and "only the first 10000 are shown" in result
    assert state.status == "completed"


async def test_a_result_that_is_not_text_is_described_not_dropped(
    tmp_path: Path, pids: Path
) -> None:
    state = await _run("image", tmp_path, pids)
    (result,) = [m["content"] for m in state.messages if m["role"] == "tool"]
    assert result.startswith("[image (image/png, about 5 bytes): not shown")


@pytest.mark.parametrize(
    ("mode", "config"), [("die_on_call", {}), ("hang_call", {"tool_timeout_s": 1.0})]
)
async def test_a_server_that_dies_or_hangs_on_a_call_ends_the_run_as_a_failure_of_the_machinery(
    mode: str, config: dict[str, Any], tmp_path: Path, pids: Path
) -> None:
    state = await _run(mode, tmp_path, pids, **config)
    assert state.status == "failed" and state.tool_server_failed
    assert "lookup" in (state.error or "")
    assert state.answer is None  # the model never read a result it could answer from


async def test_a_pattern_that_backtracks_for_hours_fails_the_server_not_the_event_loop(
    tmp_path: Path, pids: Path
) -> None:
    """``^(a|a)*$`` on 40 characters and a 'b' would hold Python's re for hours on the event
    loop; matched under a bound off the loop, the schema is found at fault and the run is the
    machinery's failure."""
    workspace = create_workspace(tmp_path / "ws", files={})
    state = new_run("fake", "What is the answer?")
    slow = ("c1", "lookup", json.dumps({"key": "a" * 40 + "b"}))
    client = fake_client(by_turn([(200, calls(slow)), (200, answer("It is 42."))]))
    servers = {"faulty": faulty("slow_pattern", pids)}
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    async with open_servers(servers, {"workspace": str(workspace.root)}, tmp_path / "logs") as s:
        await run_loop(state, client, Setup(s.tools, workspace), LoopConfig())
    ticker.cancel()
    assert state.status == "failed" and state.tool_server_failed, state.error
    assert "^(a|a)*$" in (state.error or "") and "took more than" in (state.error or "")
    assert ticks >= 10  # the loop kept turning while the pattern was matched
    assert alive(pids) == []


async def test_a_message_over_the_cap_fails_the_server_in_bounded_time(
    tmp_path: Path, pids: Path
) -> None:
    """A 40 MB result on one line: the relay never hands it to the client (whose reader would
    spend seconds of the event loop on it); the server is stopped and the run is the
    machinery's failure, its reason named."""
    import time

    started = time.perf_counter()
    state = await _run("flood", tmp_path, pids)
    assert time.perf_counter() - started < 20
    assert state.status == "failed" and state.tool_server_failed
    assert "more than 16777216 bytes" in (state.error or ""), state.error


async def test_a_servers_stderr_and_self_description_are_kept_within_their_caps(
    tmp_path: Path, pids: Path
) -> None:
    from harness.mcp.servers import INFO_CAP_CHARS, STDERR_CAP_BYTES

    workspace = create_workspace(tmp_path / "ws", files={})
    logs = tmp_path / "logs"
    async with open_servers({"faulty": faulty("chatty", pids)}, {}, logs) as s:
        (record,) = s.records
        assert record.server_name is not None and len(record.server_name) == INFO_CAP_CHARS
        assert [t.name for t in s.tools] == ["lookup"] and workspace.root.exists()
    log = (logs / "faulty.stderr").read_bytes()
    assert len(log) < STDERR_CAP_BYTES + 200 and log.rstrip().endswith(b"bytes]")
    assert alive(pids) == []


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("exit_at_start", "did not start.*refusing to start"),
        ("hang_init", "did not start"),
        ("bad_schema", "invalid input schema"),
        ("bad_ref", "'#/\\$defs/nowhere' does not resolve inside the schema"),
        ("huge_listing", "over the cap of 64000"),
    ],
)
async def test_a_server_that_will_not_start_raises_and_leaves_no_process(
    mode: str, says: str, tmp_path: Path, pids: Path
) -> None:
    with pytest.raises(ToolServerFailed, match=says):
        async with open_servers({"faulty": faulty(mode, pids)}, {}, tmp_path, 1.0):
            pytest.fail("the server started")
    assert pids.exists() and alive(pids) == []


def _ours(workspace: Path, **more: Any) -> ServerConfig:
    return ServerConfig(
        command="loopbench-mcp", args=["serve", "--workspace", str(workspace)], **more
    )


async def test_our_tools_over_mcp_keep_their_schemas_annotations_and_refusals(
    tmp_path: Path,
) -> None:
    workspace = create_workspace(tmp_path / "ws")
    ctx = ToolContext(Workspace(workspace.root))
    async with open_servers({"files": _ours(workspace.root)}, {}, tmp_path / "logs") as s:
        tools = {t.name: t for t in s.tools}
        (record,) = s.records
        assert record.server_name == "loopbench-tools" and set(record.tools) == set(tools)
        assert set(tools) == {"list_files", "read_file", "delete_file"}
        assert tools["read_file"].read_only and not tools["read_file"].needs_approval
        assert tools["delete_file"].needs_approval and not tools["delete_file"].read_only
        assert "Remember to rotate" in await tools["read_file"].run({"path": "notes.txt"}, ctx)
        with pytest.raises(Exception, match="outside the workspace"):
            await tools["read_file"].run({"path": "../../etc/passwd"}, ctx)
        # Deleting a link over MCP removes the link, not the file it names.
        (workspace.root / "alias.txt").symlink_to(workspace.root / "notes.txt")
        assert await tools["delete_file"].run({"path": "alias.txt"}, ctx) == "deleted alias.txt"
        assert (workspace.root / "notes.txt").exists()
        assert not (workspace.root / "alias.txt").is_symlink()
    # A task file may vouch for a tool the server does not call read-only.
    vouched = {"files": _ours(workspace.root, read_only=["delete_file"], deny=["list_files"])}
    async with open_servers(vouched, {}, tmp_path / "logs") as s:
        tools = {t.name: t for t in s.tools}
        assert set(tools) == {"read_file", "delete_file"} and tools["delete_file"].read_only


async def test_the_agents_sdk_drives_our_server(tmp_path: Path) -> None:
    """A client that is not ours: the OpenAI Agents SDK's MCPServerStdio."""
    from agents.mcp import MCPServerStdio

    workspace = create_workspace(tmp_path / "ws")
    params = {
        "command": sys.executable,
        "args": ["-m", "harness.mcp", "serve", "--workspace", str(workspace.root)],
    }
    async with MCPServerStdio(params=params, name="loopbench") as server:  # type: ignore[arg-type]
        listed = {t.name: t for t in await server.list_tools()}
        read, delete = listed["read_file"].annotations, listed["delete_file"].annotations
        assert read is not None and read.read_only_hint is True
        assert delete is not None and delete.destructive_hint is True
        result = await server.call_tool("list_files", {})
        assert "notes.txt  30 bytes" in str(result.content[0].text)
        refused = await server.call_tool("read_file", {"path": "nope.txt"})
        assert refused.is_error


YAML_TASKS = """\
name: my-tasks
mcpServers:
  faulty:
    command: {python}
    args: [{faulty}, ok]
    env: {{FAULTY_PID_FILE: {pids}}}
tasks:
  - id: answers
    question: What is the answer?
    checks:
      - {{kind: answer, type: number, expected: 42, candidates: [41, 42, 43]}}
      - {{kind: received, result_contains: ["the answer is 42"]}}
  - id: will-not-start
    question: What is the answer?
    mcpServers:
      faulty: {{command: {python}, args: [{faulty}, exit_at_start],
               env: {{FAULTY_PID_FILE: {pids}}}}}
    checks: [{{kind: contains, value: "42"}}]
  - id: dies
    question: What is the answer?
    mcpServers:
      faulty: {{command: {python}, args: [{faulty}, die_on_call],
               env: {{FAULTY_PID_FILE: {pids}}}}}
    checks: [{{kind: contains, value: "42"}}]
  - id: says-no
    question: What does it say?
    mcpServers:
      faulty: {{command: {python}, args: [{faulty}, tool_error],
               env: {{FAULTY_PID_FILE: {pids}}}}}
    checks: [{{kind: contains, value: "42"}}]
"""


async def test_a_task_file_in_yaml_runs_its_own_servers_and_a_server_at_fault_is_an_error(
    tmp_path: Path, pids: Path
) -> None:
    path = tmp_path / "my-tasks.yaml"
    path.write_text(YAML_TASKS.format(python=sys.executable, faulty=FAULTY, pids=pids))

    def handle(request: httpx.Request) -> httpx.Response:
        offered = [t["function"]["name"] for t in json.loads(request.content).get("tools", [])]
        if turn_of(request) == 0 and "lookup" in offered:
            return httpx.Response(200, json=calls(LOOKUP))
        if json.loads(request.content)["messages"][1]["content"] == "What does it say?":
            return httpx.Response(200, json=answer('{"name": "lookup", "arguments": {}}'))
        return httpx.Response(200, json=answer("The answer is 42."))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            serving=Serving(base_url=url, model="fake"), tasks=path, out=tmp_path / "r.jsonl"
        )
        records = {r.task_id: r for r in read_runs(await run_eval(settings, echo=lambda _: None))}
    assert records["answers"].status == "completed" and records["answers"].correct
    environment = records["answers"].environment
    assert isinstance(environment, McpData) and environment.servers is not None
    (server,) = environment.servers
    assert (server.server_name, server.server_version) == ("faulty", "1.0")
    assert list(server.tools) == ["lookup"]
    # The machinery's faults are errors, whatever the answer would have been.
    for fault in ("will-not-start", "dies"):
        assert records[fault].status == "error", records[fault]
    assert "refusing to start" in (records["will-not-start"].error or "")
    # A tool error is the model's to read: the run goes on and is scored; a call of the
    # server's tool written as text is counted as one.
    assert records["says-no"].status == "completed" and records["says-no"].tools_called
    assert records["says-no"].call_shaped_text == 1 and not records["says-no"].correct
    assert alive(pids) == []


def test_check_tasks_names_the_line_the_field_and_what_was_expected(tmp_path: Path) -> None:
    from evals.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\n"
        "tasks:\n"
        "  - id: one\n"
        "    question: How many?\n"
        "    checks:\n"
        "      - {kind: answer, type: number, expected: 5, candidates: [1, 2]}\n"
        "  - id: two\n"
        "    qestion: typo\n"
        "    checks: [{kind: contains, value: x}]\n"
    )
    lines: list[str] = []
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check-tasks", str(bad)]) == 1
    lines = out.getvalue().splitlines()
    assert any("line 6: tasks.0.checks.0" in s and "not among the candidates" in s for s in lines)
    assert any("line 7: tasks.1.question: Field required" in s for s in lines)
    assert any("line 8: tasks.1.qestion: Extra inputs are not permitted" in s for s in lines)
    escaping = tmp_path / "escaping.yaml"
    escaping.write_text(
        "name: escaping\n"
        "tasks:\n"
        "  - id: ../../../tmp/x\n"
        "    question: Which?\n"
        "    checks: [{kind: contains, value: x}]\n"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check-tasks", str(escaping)]) == 1
    assert "line 3: tasks.0.id" in out.getvalue() and "names the task's folders" in out.getvalue()
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\ntasks: [\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check-tasks", str(broken)]) == 1
    assert "not valid YAML" in out.getvalue()
    assert load_tasks(Path("evals/tasks/files6.json")).name == "files6"


@pytest.mark.skipif(
    not (MCP_BIN / "mcp-server-filesystem").exists(),
    reason="the community MCP servers are not installed (make mcp-servers)",
)
async def test_the_readme_example_task_file_runs_on_the_reference_filesystem_server(
    tmp_path: Path,
) -> None:
    """The lines the README shows: the example task file checks, and a model that looks and
    answers right is credited through the real server from npm."""
    readme = Path("README.md").read_text()
    assert "loopbench check-tasks examples/my-tasks.yaml" in readme
    assert "loopbench eval --tasks examples/my-tasks.yaml" in readme
    example = Path("examples/my-tasks.yaml")

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        folder = re.search(r"files in (\S+)\. Look", body["messages"][0]["content"])
        assert folder is not None
        question = body["messages"][1]["content"]
        if turn_of(request) == 0:
            if "launch" in question:
                path = json.dumps({"path": f"{folder.group(1)}/plan.md"})
                return httpx.Response(200, json=calls(("c1", "read_text_file", path)))
            path = json.dumps({"path": folder.group(1)})
            return httpx.Response(200, json=calls(("c1", "list_directory", path)))
        said = "The launch is on 14 March." if "launch" in question else "There are 3 files."
        return httpx.Response(200, json=answer(said))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            serving=Serving(base_url=url, model="fake"), tasks=example, out=tmp_path / "r.jsonl"
        )
        records = read_runs(await run_eval(settings, echo=lambda _: None))
    assert [(r.task_id, r.status, r.correct) for r in records] == [
        ("launch-date", "completed", True),
        ("how-many", "completed", True),
    ]


def test_the_task_folders_root_is_this_users_own_and_names_no_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root in the shared temporary folder that another user made (or a link in its place)
    is refused, never written through; a task's folder says nothing of its id or question."""
    from evals.errors import EvalError
    from evals.mcp import environment as mcp

    root = tmp_path / "shared" / f"loopbench-mcp-{os.getuid()}"
    root.parent.mkdir()
    monkeypatch.setattr(mcp, "STABLE_ROOT", root)
    tasks = load_tasks(Path("evals/tasks/mcp/gen-test-s1000-n60-filesystem.json")).tasks
    (task,) = [t for t in tasks if t.id == "12-missing"]
    folder = mcp._claim(task)
    assert folder.parent == root and root.stat().st_mode & 0o777 == 0o700
    assert task.id not in folder.name and "missing" not in folder.name
    assert mcp._claim(task) == root / f"{folder.name}-2"  # a second run at the same time

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for taken in ("link", "open", "foreign"):
        for child in sorted(root.iterdir()):
            child.rmdir()
        root.rmdir()
        if taken == "link":
            root.symlink_to(elsewhere)
        else:
            root.mkdir(mode=0o700)
            if taken == "open":
                root.chmod(0o777)
            else:
                os.chown(root, 65534, 65534)  # nobody's
        with pytest.raises(EvalError, match="remove it and run again"):
            mcp._claim(task)
        if taken == "link":
            root.unlink()
            root.mkdir(mode=0o700)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("server", ["git", "sqlite"])
def test_each_python_mcp_servers_venv_is_pinned_whole_with_hashes(server: str) -> None:
    """Every package the server's venv holds is named with its version and file hash, the
    Makefile installs with --require-hashes, and the venv holds exactly that."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    text = (root / "mcp-servers" / f"{server}.txt").read_text()
    entries = re.findall(
        r"^([A-Za-z0-9_.\-\[\]]+)==(\S+) \\\n\s+--hash=sha256:[0-9a-f]{64}$", text, re.M
    )
    listed = [line for line in text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(entries) == len(listed) > 10
    assert f"--require-hashes -r $(MCP_DIR)/{server}.txt" in (root / "Makefile").read_text()
    python = root / "mcp-servers" / server / "bin" / "python"
    frozen = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    pinned = {(re.sub(r"\[.*\]", "", n).lower().replace("_", "-"), v) for n, v in entries}
    held = {
        (n.lower().replace("_", "-"), v) for n, v in re.findall(r"^(\S+)==(\S+)$", frozen, re.M)
    }
    assert held == pinned


@pytest.mark.parametrize("approvals", ["approve", "reject"])
async def test_a_conversation_over_an_mcp_server_is_judged_by_the_state_it_left(
    tmp_path: Path, approvals: str
) -> None:
    """The README's conversation example through the real filesystem server from npm: a
    scripted user asks for a change, the agent reads and writes with the server's tools, and
    the ``after`` check reads the file once the talk is over. With the write approved the
    check passes; declined, the file is unchanged and it fails."""
    from evals.conversation import STOP
    from evals.tasks import write_taskset

    example = load_tasks(Path("examples/my-conversation.yaml"))
    (task,) = example.tasks
    assert task.user is not None and task.user.script is None
    task.user.script = ["Hi, please cancel my order 1042, I ordered the wrong size.", STOP]
    tasks = tmp_path / "conversation.json"
    write_taskset(example, tasks)
    seen: list[list[str]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        folder = re.search(r"files in (\S+)\. Look", body["messages"][0]["content"])
        assert folder is not None
        seen.append([m["role"] for m in body["messages"]])
        path = f"{folder.group(1)}/orders.md"
        made = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if made == 0:
            return httpx.Response(
                200, json=calls(("c1", "read_text_file", json.dumps({"path": path})))
            )
        if made == 1:
            content = "# Orders\n1041: shipped\n1042: cancelled\n1043: pending\n"
            arguments = json.dumps({"path": path, "content": content})
            return httpx.Response(200, json=calls(("c2", "write_file", arguments)))
        return httpx.Response(200, json=answer("Order 1042 is cancelled."))

    with running_server(server_app(handle, "fake")) as url:  # type: ignore[arg-type]
        settings = EvalSettings(
            serving=Serving(base_url=url, model="fake"),
            tasks=tasks,
            out=tmp_path / "r.jsonl",
            approvals=approvals,
        )
        (record,) = read_runs(await run_eval(settings, echo=lambda _: None))
    assert record.conversation is not None
    assert (record.conversation.end, record.conversation.user_turns) == ("user_stop", 2)
    assert record.conversation.user.scripted
    assert [t.calls_before for t in record.conversation.said] == [0, 2]
    assert record.conversation.said[1].replying_to == "Order 1042 is cancelled."
    (after,) = [c for c in record.checks if c["kind"] == "after"]
    assert (after["passed"], record.correct) == ((True, True) if approvals == "approve"
                                                 else (False, False))  # fmt: skip
    assert seen[0][1:] == ["user"]  # the user's words open the talk, not the task's question
    assert record.question == task.question
