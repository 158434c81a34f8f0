"""The tool catalogue over a workspace: confinement, errors for the model, progress, cancel."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from harness.cancel import Cancelled, CancelToken
from harness.errors import PathRefused, ToolError
from harness.policies.listing import list_by_size
from harness.state import Call
from harness.toolrun import run_call
from harness.tools import Tool, ToolContext, default_tools, listed_names
from harness.workspace import SEED_FILES, Workspace
from tests.helpers import snapshot

TOOLS = {t.name: t for t in default_tools()}


def run(tool: str, ws: Workspace, **args: object) -> str:
    return asyncio.run(TOOLS[tool].run(dict(args), ToolContext(workspace=ws)))


def test_catalogue_declares_read_only_and_approval() -> None:
    assert {n: (t.read_only, t.needs_approval) for n, t in TOOLS.items()} == {
        "list_files": (True, False),
        "read_file": (True, False),
        "delete_file": (False, True),
        "scan_archive": (True, False),
    }


def test_workspace_holds_the_three_files_and_errors_log_is_largest(workspace: Workspace) -> None:
    listing = run("list_files", workspace)
    sizes = {line.split()[0]: int(line.split()[1]) for line in listing.splitlines()}
    assert set(sizes) == {"errors.log", "access.log", "notes.txt"}
    assert max(sizes, key=lambda n: sizes[n]) == "errors.log"
    assert "worker 7 timed out after 30000 ms" in run("read_file", workspace, path="errors.log")
    assert run("read_file", workspace, path="notes.txt") == SEED_FILES["notes.txt"]


def test_missing_file_error_tells_the_model_what_to_do(workspace: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        run("read_file", workspace, path="timeout.log")
    assert "no such file: timeout.log" in str(caught.value)
    assert "Call list_files" in str(caught.value)
    assert not caught.value.permanent


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "sub/../../x", "..", ""])
def test_paths_outside_the_workspace_are_refused(workspace: Workspace, path: str) -> None:
    before = snapshot(workspace.root.parent)
    for tool in ("read_file", "delete_file"):
        with pytest.raises(ToolError):
            run(tool, workspace, path=path)
    assert snapshot(workspace.root.parent) == before


def test_the_folders_own_path_names_a_file_inside_it_and_nothing_else(
    workspace: Workspace,
) -> None:
    """A prompt may give the folder's path (tasks over MCP servers do): a path through it reads
    the file inside; the folder itself, its parent and a way out through it stay refused."""
    root = str(workspace.root)
    assert "rotate" in run("read_file", workspace, path=f"{root}/notes.txt")
    assert "rotate" in run("read_file", workspace, path=f"{root}/./notes.txt")
    for path in (root, f"{root}/../x", f"{root}/../{workspace.root.name}x/notes.txt"):
        with pytest.raises(PathRefused):
            run("read_file", workspace, path=path)
    with pytest.raises(PathRefused):
        run("read_file", workspace, path=f"{root}/.ledger.json")


def test_escape_attempts_are_permanent_errors(workspace: Workspace) -> None:
    with pytest.raises(PathRefused) as caught:
        run("read_file", workspace, path="/etc/passwd")
    assert caught.value.permanent


def test_symlink_out_of_the_workspace_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, workspace.root / "link.txt")
    before = snapshot(tmp_path)
    with pytest.raises(PathRefused):
        run("read_file", workspace, path="link.txt")
    with pytest.raises(PathRefused):
        run("delete_file", workspace, path="link.txt")
    assert secret.read_text() == "top secret"
    assert snapshot(tmp_path) == before


def test_delete_with_the_same_idempotency_key_acts_once(workspace: Workspace) -> None:
    ctx = ToolContext(workspace=workspace, idempotency_key="run1:c2")
    first = asyncio.run(TOOLS["delete_file"].run({"path": "access.log"}, ctx))
    assert first == "deleted access.log"
    assert not (workspace.root / "access.log").exists()
    (workspace.root / "access.log").write_text("a new file with the same name")
    again = asyncio.run(TOOLS["delete_file"].run({"path": "access.log"}, ctx))
    assert again == first
    assert (workspace.root / "access.log").read_text() == "a new file with the same name"
    assert "access.log" in run("list_files", workspace)
    assert ".ledger.json" not in run("list_files", workspace)


async def test_scan_archive_reports_progress_and_finishes(workspace: Workspace) -> None:
    seen: list[str] = []
    result = await TOOLS["scan_archive"].run(
        {}, ToolContext(workspace=workspace, progress=seen.append)
    )
    assert seen == [f"scanned {n} of 1200 files" for n in range(200, 1201, 200)]
    assert "1200 files" in result


async def test_scan_archive_stops_when_the_token_fires(workspace: Workspace) -> None:
    token = CancelToken()
    seen: list[str] = []

    def progress(label: str) -> None:
        seen.append(label)
        if len(seen) == 2:
            token.cancel("user pressed Stop")

    with pytest.raises(Cancelled) as caught:
        await TOOLS["scan_archive"].run(
            {}, ToolContext(workspace=workspace, cancel=token, progress=progress)
        )
    assert caught.value.reason == "user pressed Stop"
    assert seen == ["scanned 200 of 1200 files", "scanned 400 of 1200 files"]


def test_tool_specs_are_openai_function_specs() -> None:
    for tool in TOOLS.values():
        spec = Tool.spec(tool)
        assert spec["type"] == "function"
        assert spec["function"]["name"] == tool.name
        assert spec["function"]["parameters"]["type"] == "object"


async def test_arguments_the_schema_refuses_are_an_error_the_model_reads(
    workspace: Workspace,
) -> None:
    tools = {t.name: t for t in default_tools()}
    ctx = ToolContext(workspace=workspace)
    for arguments, says in [
        ("{}", "'path' is a required property"),
        ('{"path": 7}', "7 is not of type 'string'"),
        ('{"path": "errors.log", "required": ["path"]}', "Additional properties"),
    ]:
        outcome = await run_call(Call("c1", "read_file", arguments, turn=1, index=0), tools, ctx)
        assert not outcome.ran and outcome.content == ""
        assert outcome.error is not None and says in str(outcome.error)
    ok = await run_call(Call("c1", "read_file", '{"path": "notes.txt"}', 1, 0), tools, ctx)
    assert ok.ran and ok.error is None and "rotate" in ok.content


def test_listed_names_reads_back_what_list_files_writes(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    for name, text in SEED_FILES.items():
        (tmp_path / name).write_text(text)
    ctx = ToolContext(workspace=workspace)
    for fn in (TOOLS["list_files"].fn, list_by_size):
        result = asyncio.run(fn({}, ctx))
        assert sorted(listed_names(result)) == sorted(SEED_FILES), result
    # A header, an empty workspace or a file's own text names no file.
    (tmp_path / "empty").mkdir()
    empty = asyncio.run(
        TOOLS["list_files"].run({}, ToolContext(workspace=Workspace(tmp_path / "empty")))
    )
    assert empty == "The workspace is empty."
    assert listed_names(empty) == []
    assert listed_names("Files sorted by size, biggest first:\n12 bytes\n") == []


# --- Bounded reads, and confinement on every path component (hardening) ----------------------


def test_a_private_folder_anywhere_in_the_path_is_refused(workspace: Workspace) -> None:
    hidden = workspace.root / ".hidden"
    hidden.mkdir()
    (hidden / "creds.txt").write_text("password=hunter2")
    for tool in ("read_file", "delete_file"):
        with pytest.raises(PathRefused) as caught:
            run(tool, workspace, path=".hidden/creds.txt")
        assert "private" in str(caught.value) and "hunter2" not in str(caught.value)
    assert (hidden / "creds.txt").read_text() == "password=hunter2"


def test_a_link_inside_that_names_a_private_file_is_refused(workspace: Workspace) -> None:
    (workspace.root / ".secret").write_text("token")
    os.symlink(workspace.root / ".secret", workspace.root / "plain.txt")
    with pytest.raises(PathRefused):
        run("read_file", workspace, path="plain.txt")


def test_a_hard_link_to_a_file_outside_is_neither_read_nor_deleted(
    workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the workspace")
    os.link(outside, workspace.root / "alias.txt")
    for tool in ("read_file", "delete_file"):
        with pytest.raises(PathRefused) as caught:
            run(tool, workspace, path="alias.txt")
        assert "hard link" in str(caught.value)
    assert outside.read_text() == "outside the workspace"
    assert (workspace.root / "alias.txt").exists()


def test_deleting_a_link_removes_the_link_never_the_file_it_names(workspace: Workspace) -> None:
    """A person approves deleting ``alias.txt``: ``alias.txt`` goes, ``notes.txt`` stays."""
    os.symlink(workspace.root / "notes.txt", workspace.root / "alias.txt")
    os.mkdir(workspace.root / "logs")
    os.symlink(workspace.root / "errors.log", workspace.root / "logs" / "latest.log")
    assert run("delete_file", workspace, path="alias.txt") == "deleted alias.txt"
    assert run("delete_file", workspace, path="logs/latest.log") == "deleted latest.log"
    assert not os.path.lexists(workspace.root / "alias.txt")
    assert not os.path.lexists(workspace.root / "logs" / "latest.log")
    assert (workspace.root / "notes.txt").read_text() == SEED_FILES["notes.txt"]
    assert (workspace.root / "errors.log").read_text() == SEED_FILES["errors.log"]


def test_list_files_never_reports_a_file_outside_through_a_link(
    workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "big.bin"
    outside.write_bytes(b"x" * 12345)
    os.symlink(outside, workspace.root / "looks-local.txt")
    os.symlink(workspace.root / "notes.txt", workspace.root / "notes-link.txt")
    listing = run("list_files", workspace)
    assert "looks-local.txt" not in listing and "12345" not in listing
    size = len(SEED_FILES["notes.txt"].encode())
    assert f"notes-link.txt  {size} bytes" in listing.splitlines()


def test_read_file_reads_at_most_its_cap_and_says_so(workspace: Workspace) -> None:
    from harness.tools import READ_CAP_BYTES

    line = "2026-03-02 10:15:41 ERROR worker 7 timed out after 30000 ms\n"
    (workspace.root / "huge.log").write_text(line * (20 * 1024 * 1024 // len(line)))
    text = run("read_file", workspace, path="huge.log")
    assert len(text.encode()) < READ_CAP_BYTES + 200
    assert text.startswith(line)
    size = (workspace.root / "huge.log").stat().st_size
    assert text.endswith(
        f"[cut: huge.log is {size} bytes; only the first {READ_CAP_BYTES} bytes were read]"
    )


def test_a_file_cut_inside_a_character_is_still_text(workspace: Workspace) -> None:
    from harness.tools import READ_CAP_BYTES

    (workspace.root / "wide.txt").write_text("é" * READ_CAP_BYTES)  # 2 bytes each
    text = run("read_file", workspace, path="wide.txt")
    assert text.startswith("é" * 1000) and "[cut: wide.txt" in text and "binary" not in text


@pytest.mark.parametrize("content", [b"\x00" * 5_000_000, b"\x89PNG\r\n\x1a\n\xff\xfe\x00data"])
def test_a_binary_file_is_described_not_shown(workspace: Workspace, content: bytes) -> None:
    (workspace.root / "blob.bin").write_bytes(content)
    text = run("read_file", workspace, path="blob.bin")
    assert (
        text
        == f"blob.bin is a binary file ({len(content)} bytes), not text; its bytes are not shown."
    )


async def test_read_file_runs_off_the_event_loop(workspace: Workspace) -> None:
    """The read happens in a worker thread: the loop's own timer ticks while the file is read,
    so a tool timeout can fire (a read on the loop would hold every timer until it returned)."""
    import threading

    from harness import tools as tools_module

    entered, release = threading.Event(), threading.Event()
    real = tools_module.read_bounded

    def held(path: Path, cap: int = tools_module.READ_CAP_BYTES) -> str:
        entered.set()
        release.wait(timeout=30)
        return real(path, cap)

    tools_module.read_bounded = held  # type: ignore[assignment]
    try:
        reading = asyncio.ensure_future(
            TOOLS["read_file"].run({"path": "notes.txt"}, ToolContext(workspace=workspace))
        )
        while not entered.is_set():
            await asyncio.sleep(0.01)  # the loop runs while the read is held
        assert not reading.done()
        release.set()
        assert await reading == SEED_FILES["notes.txt"]
    finally:
        tools_module.read_bounded = real  # type: ignore[assignment]
