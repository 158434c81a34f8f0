"""llama.cpp as `make` builds it here: tuned for this machine, without the AMX kernels whose
first matrix product faults on some machines that report AMX (the bindings and llama-server)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from serve_local import llama_server
from serve_local.backends.llama import amx_warning

llama_cpp = pytest.importorskip("llama_cpp")


def _amx_instructions(binary: Path) -> int:
    """How many AMX tile instructions the binary's code holds (objdump's disassembly)."""
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(word in listing for word in ("ldtilecfg", "tdpbssd", "tdpbf16ps"))


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_the_bindings_carry_no_amx_kernels() -> None:
    (cpu,) = Path(llama_cpp.__file__).parent.glob("lib/libggml-cpu.so")
    assert _amx_instructions(cpu) == 0
    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX" in info and "AMX_INT8 = 1" not in info
    assert amx_warning(info) is None


@pytest.mark.skipif(
    shutil.which("objdump") is None or not llama_server.binary().exists(),
    reason="objdump or llama-server (make peer-llama-server) is missing",
)
def test_llama_server_carries_no_amx_kernels() -> None:
    assert llama_server.binary().parent.name.endswith(f"-{llama_server.BUILD}")
    assert _amx_instructions(llama_server.binary()) == 0


def test_the_flags_come_before_the_users_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CFLAGS", "-O3")
    monkeypatch.delenv("CXXFLAGS", raising=False)
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=on")
    env = llama_server.build_env()
    assert env["CFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -O3"
    assert env["CXXFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert env["CMAKE_ARGS"] == "-DGGML_CUDA=on"


def test_a_build_with_amx_kernels_is_named_at_load() -> None:
    assert amx_warning("CPU : AVX2 = 1 | AVX512 = 1 | LLAMAFILE = 1") is None
    warning = amx_warning("CPU : AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1")
    assert warning is not None and "rm .venv/.installed-llama" in warning
