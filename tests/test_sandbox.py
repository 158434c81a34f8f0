"""The Landlock sandbox BFCL's checker runs under: once confined, a process writes only in its
folder, runs no program and opens no TCP connection, whoever it runs as (root included)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evals.bfcl import sandbox

pytestmark = pytest.mark.skipif(
    sandbox.abi() < 1, reason="this kernel has no Landlock (Linux 5.13 or later)"
)

PROBE = r"""
import json, os, socket, subprocess, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from evals.bfcl import sandbox
folder, outside, port = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
said = sandbox.confine(folder)
found = {"said": said}
def attempt(name, fn):
    try:
        fn()
        found[name] = "allowed"
    except PermissionError:
        found[name] = "refused"
attempt("write inside", lambda: (folder / "note.txt").write_text("ok"))
attempt("mkdir inside", lambda: (folder / "sub").mkdir())
attempt("write outside", lambda: (outside / "PWNED").write_text("x"))
attempt("delete outside", lambda: (outside / "keep.txt").unlink())
attempt("run a program", lambda: subprocess.run(["/bin/true"], check=True))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
print(json.dumps(found))
"""


def test_a_confined_process_writes_only_in_its_folder(tmp_path: Path) -> None:
    folder, outside = tmp_path / "checker", tmp_path / "checkout"
    folder.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    root = Path(__file__).resolve().parents[1]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(root), str(folder), str(outside), str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    found = json.loads(done.stdout)
    assert found.pop("said").startswith(f"landlock ABI {sandbox.abi()}")
    expected = {
        "write inside": "allowed",
        "mkdir inside": "allowed",
        "write outside": "refused",
        "delete outside": "refused",
        "run a program": "refused",
    }
    # TCP is governed from Landlock ABI 4 on.
    expected["connect"] = "refused" if sandbox.abi() >= 4 else "allowed"
    assert found == expected
    assert (folder / "note.txt").read_text() == "ok"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
