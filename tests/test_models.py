"""Model SPEC resolution: packaged weights, verification, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from serve_local.models import (
    QWEN_CODER,
    SMOLLM2,
    ModelUnavailable,
    packaged_qwen,
    resolve,
)

QWEN_SHA = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
ROOT = Path(__file__).resolve().parents[1]


def test_packaged_qwen_is_assembled_and_verified() -> None:
    model = resolve(QWEN_CODER)
    assert model.path.stat().st_size == 491_400_064
    assert model.sha256 == QWEN_SHA
    assert (model.kind, model.source) == ("gguf", "packaged")


def test_default_is_the_packaged_qwen_without_a_cached_instruct(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert resolve(None).name == QWEN_CODER


def test_default_prefers_a_cached_qwen_instruct_gguf(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    snapshot = tmp_path / "models--Qwen--Qwen2.5-0.5B-Instruct-GGUF" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "qwen2.5-0.5b-instruct-q4_k_m.gguf").symlink_to(resolve(SMOLLM2).path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    model = resolve(None)
    assert model.source == "hf-cache"
    assert model.name == "qwen2.5-0.5b-instruct/qwen2.5-0.5b-instruct-q4_k_m.gguf"


def test_a_wrong_assembled_file_is_an_error_not_a_silent_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOOPBENCH_CACHE", str(tmp_path))
    target = tmp_path / "loopbench" / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelUnavailable, match="not the packaged"):
        packaged_qwen()


def test_smollm2_resolves_to_the_package_file() -> None:
    model = resolve(SMOLLM2)
    assert model.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert model.path.read_bytes()[:4] == b"GGUF"


def test_gguf_path_and_folder(tmp_path: Path) -> None:
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF")
    assert resolve(str(file)).kind == "gguf"
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    assert resolve(str(tmp_path / "hf")).kind == "hf-folder"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailable, match=r"without config\.json"):
        resolve(str(tmp_path / "empty"))


def test_unknown_spec_names_itself() -> None:
    with pytest.raises(ModelUnavailable, match=r"no-such-model\.gguf"):
        resolve("no-such-model.gguf")


def test_hub_spec_offline_names_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable) as caught:
        resolve("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")
    assert QWEN_CODER in str(caught.value)


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "serve_local", "--port", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )


def test_startup_fails_naming_a_missing_model() -> None:
    done = serve("--backend", "llama", "--model", "/nowhere/missing.gguf")
    assert done.returncode == 2
    assert "/nowhere/missing.gguf" in done.stderr


def test_startup_fails_on_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.gguf"
    bad.write_bytes(os.urandom(4096))
    done = serve("--backend", "llama", "--model", str(bad))
    assert done.returncode == 2
    assert "corrupt.gguf is not a GGUF file" in done.stderr


def test_startup_fails_on_a_truncated_gguf(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.gguf"
    with open(resolve(SMOLLM2).path, "rb") as f:
        truncated.write_bytes(f.read(1 << 20))
    done = serve("--backend", "llama", "--model", str(truncated))
    assert done.returncode == 1
    assert "cannot load the model" in done.stdout + done.stderr


def test_cuda_on_a_machine_without_it_is_a_clear_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    done = serve("--backend", "transformers", "--model", SMOLLM2, "--device", "cuda")
    assert done.returncode == 2
    assert "no CUDA device" in done.stderr
