"""Model SPEC resolution: the packaged ladder, assembly, verification, clear errors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from serve_local import daemon
from serve_local.models import (
    DEFAULT_NAME,
    LADDER,
    PACKAGED,
    QWEN_CODER,
    SMOLLM2,
    ModelUnavailable,
    PackagedFile,
    PackagedModel,
    main,
    packaged,
    resolve,
)
from serve_local.process import free_port

# The checksums the registry packages are published with, not read from our own table.
QWEN_SHA = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_15B = "qwen2.5-coder-1.5b-instruct"
QWEN_15B_SHA = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ROOT = Path(__file__).resolve().parents[1]


def test_packaged_qwen_is_assembled_and_verified() -> None:
    model = resolve(QWEN_CODER)
    assert model.path.stat().st_size == 491_400_064
    assert model.sha256 == QWEN_SHA
    assert (model.kind, model.source) == ("gguf", "packaged")


def test_default_is_the_packaged_coder_1_5b_without_a_cached_instruct(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    model = resolve(None)
    assert (model.name, model.source) == (QWEN_15B, "packaged")
    assert model.sha256 == QWEN_15B_SHA


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
        packaged(QWEN_CODER)


# A packaged model of three small parts, in three small packages on sys.path.
FAKE_PARTS = [b"GGUF" + b"a" * 60, b"b" * 64, b"c" * 17]
FAKE_BYTES = b"".join(FAKE_PARTS)


def fake_entry() -> PackagedModel:
    return PackagedModel(
        name="fake-1m",
        title="Fake",
        parameters="1M",
        quantization="Q4_K_M",
        size=len(FAKE_BYTES),
        sha256=hashlib.sha256(FAKE_BYTES).hexdigest(),
        parts=tuple(
            PackagedFile(f"lbfake-part{i}", "1.0", f"lbfake_part{i}", f"data/part{i:02d}.bin")
            for i in range(1, 4)
        ),
        licence="test",
    )


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[PackagedModel]:
    site = tmp_path / "site"
    for i, data in enumerate(FAKE_PARTS, start=1):
        folder = site / f"lbfake_part{i}"
        (folder / "data").mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("LOOPBENCH_CACHE", str(tmp_path / "cache"))
    model = fake_entry()
    monkeypatch.setitem(PACKAGED, model.name, model)
    yield model


def cache_files(tmp_path: Path) -> list[str]:
    """The model files in the cache (the assembly lock aside)."""
    folder = tmp_path / "cache" / "loopbench" / "models"
    files = folder.iterdir() if folder.is_dir() else []
    return sorted(p.name for p in files if p.suffix != ".lock")


def test_parts_are_assembled_once_into_the_cache(fake_model: PackagedModel, tmp_path: Path) -> None:
    model = resolve(fake_model.name)
    assert (model.name, model.source, model.kind) == ("fake-1m", "packaged", "gguf")
    assert model.path.read_bytes() == FAKE_BYTES
    assert cache_files(tmp_path) == ["fake-1m-q4_k_m.gguf"]
    first = model.path.stat()
    again = resolve(fake_model.name).path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


@pytest.mark.parametrize(("part", "data"), [(2, b"B" * 64), (3, b"c" * 18)])
def test_parts_that_assemble_to_other_bytes_are_refused(
    fake_model: PackagedModel, tmp_path: Path, part: int, data: bytes
) -> None:
    (tmp_path / "site" / f"lbfake_part{part}" / "data" / f"part{part:02d}.bin").write_bytes(data)
    got = b"".join(data if i == part else p for i, p in enumerate(FAKE_PARTS, start=1))
    with pytest.raises(ModelUnavailable, match="make models") as caught:
        resolve(fake_model.name)
    assert (
        f"assemble to {len(got)} bytes with sha256 {hashlib.sha256(got).hexdigest()}, "
        f"not {len(FAKE_BYTES)} bytes with sha256 {fake_model.sha256}"
    ) in str(caught.value)
    # Nothing is left behind that a later start could take for the model.
    assert cache_files(tmp_path) == []


# Assembles the fake model in another process, which stops for good once the parts are
# copied, while it checks their sha256: a process to kill half way through an assembly.
ASSEMBLE_FAKE = """
import pathlib, sys, threading
from serve_local import models
from tests.test_models import fake_entry

def stuck(path):
    pathlib.Path(sys.argv[1]).touch()
    threading.Event().wait()

models._file_sha256 = stuck
models.PACKAGED["fake-1m"] = fake_entry()
models.resolve("fake-1m")
"""


def test_an_assembly_killed_half_way_leaves_no_model_and_the_next_start_completes(
    fake_model: PackagedModel, tmp_path: Path
) -> None:
    """SIGKILL between copying the parts and checking them: no file takes the model's name,
    the lock dies with the process, and the next start assembles the model again."""
    copied = tmp_path / "copied"
    proc = subprocess.Popen(
        [sys.executable, "-c", ASSEMBLE_FAKE, str(copied)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}"},
    )
    try:
        while not copied.exists():
            assert proc.poll() is None, "the assembly ended before it checked the parts"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert cache_files(tmp_path) == ["fake-1m-q4_k_m.gguf.partial"]
    assert resolve(fake_model.name).path.read_bytes() == FAKE_BYTES
    assert cache_files(tmp_path) == ["fake-1m-q4_k_m.gguf"]


def test_a_missing_part_names_its_package_and_make_models(
    fake_model: PackagedModel, tmp_path: Path
) -> None:
    shutil.rmtree(tmp_path / "site" / "lbfake_part2")
    with pytest.raises(ModelUnavailable) as caught:
        resolve(fake_model.name)
    message = str(caught.value)
    assert "missing: lbfake-part2)" in message and "`make models`" in message
    assert "lbfake-part1" not in message and "lbfake-part3" not in message
    assert cache_files(tmp_path) == []


def status_of(listing: str, name: str) -> str:
    block = listing.split(f"\n{name}")[1].split("\n\n")[0]
    return next(line for line in block.splitlines() if "status" in line).split(maxsplit=1)[1]


def test_list_says_which_packaged_models_are_installed(
    fake_model: PackagedModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list"]) == 0
    assert status_of("\n" + capsys.readouterr().out, "fake-1m") == (
        "installed; assembled on first use"
    )
    resolve(fake_model.name)
    main(["list"])
    assembled = tmp_path / "cache" / "loopbench" / "models" / "fake-1m-q4_k_m.gguf"
    assert status_of("\n" + capsys.readouterr().out, "fake-1m") == (
        f"installed; assembled: {assembled}"
    )
    shutil.rmtree(tmp_path / "site" / "lbfake_part3")
    main(["list"])
    assert status_of("\n" + capsys.readouterr().out, "fake-1m") == (
        "not installed (missing: lbfake-part3)"
    )


def test_list_command_shows_every_packaged_model_and_the_default(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "serve_local.models", "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path / "empty")},
    )
    assert done.returncode == 0, done.stderr
    listing = "\n" + done.stdout
    for model in PACKAGED.values():
        assert f"\n{model.name}" in listing
        assert f"sha256       {model.sha256}" in listing
        # make test installs every packaged model first (make models)
        assert status_of(listing, model.name).startswith("installed")
    assert f"\n{QWEN_15B}  (default)" in listing
    assert done.stdout.rstrip().endswith(f"serves {QWEN_15B}.")
    # Which models the ladder compares, and why one is left out.
    for model in PACKAGED.values():
        block = listing.split(f"\n{model.name}")[1].split("\n\n")[0]
        ladder = next(x for x in block.splitlines() if x.strip().startswith("ladder"))
        assert ladder.split(maxsplit=1)[1].startswith(
            "no: pretrained" if model.off_ladder else "yes"
        )
    # Every licence a package ships is named with its installed path.
    for model in PACKAGED.values():
        if model.licence_file:
            line = next(
                x
                for x in listing.split(f"\n{model.name}")[1].splitlines()
                if x.strip().startswith("licence")
            )
            assert Path(line.rsplit(": ", 1)[1]).is_file(), line


def test_make_models_installs_every_packaged_model() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["models"]
    # -n prints the commands without running them; -B as if nothing were installed yet
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", "models"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert any('install --quiet -e ".[models]"' in line for line in lines)
    no_deps = [line.split() for line in lines if "install" in line and "--no-deps" in line]
    for model in PACKAGED.values():
        for package in model.packages:
            if model.no_deps:
                assert any(package.requirement in words for words in no_deps), package
                assert package.requirement not in extra
            else:
                assert package.requirement in extra, package
    assert lines[-1].endswith("-m serve_local.models list")


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


def test_unknown_spec_names_itself_and_the_packaged_names() -> None:
    with pytest.raises(ModelUnavailable, match=r"no-such-model\.gguf") as caught:
        resolve("no-such-model.gguf")
    assert all(name in str(caught.value) for name in PACKAGED)


def test_hub_spec_offline_names_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Read once, when huggingface_hub is first imported: an earlier test may have imported
    # it, and it would then try the network (and its retries) before giving up.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelUnavailable) as caught:
        resolve("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")
    assert DEFAULT_NAME in str(caught.value)


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "serve_local", "--port", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )


@pytest.mark.slow
def test_a_fresh_clone_serves_the_coder_1_5b_and_it_answers(tmp_path: Path) -> None:
    """No MODEL and no Qwen in the Hugging Face cache: what `make serve-local` serves."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MODEL"}
    env["HF_HUB_CACHE"] = str(tmp_path / "empty")
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "serve_local", "--backend", "llama", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        while daemon.health(port) != 200:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            time.sleep(0.2)
        base_url = f"http://127.0.0.1:{port}/v1"
        (entry,) = httpx.get(f"{base_url}/models", timeout=10).json()["data"]
        assert (entry["id"], entry["sha256"]) == (QWEN_15B, QWEN_15B_SHA)
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=300)
        completion = client.chat.completions.create(
            model=QWEN_15B,
            messages=[{"role": "user", "content": "What is 17 + 25? Reply with the number."}],
            max_tokens=16,
            temperature=0,
        )
        assert completion.model == QWEN_15B
        assert "42" in (completion.choices[0].message.content or "")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


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


def test_the_ladder_is_the_instruction_tuned_models_and_make_sweep_serves_it() -> None:
    assert LADDER == [QWEN_15B, "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"]
    assert "not instruction-tuned" in PACKAGED["gemma-3-270m"].off_ladder
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "sweep"], cwd=ROOT, capture_output=True, text=True
    )
    assert planned.returncode == 0, planned.stderr
    command = next(line for line in planned.stdout.splitlines() if "lab sweep" in line)
    assert f"--models {','.join(LADDER)} " in command
    # ... under every preset, in the order presets.json names them.
    presets = json.loads((ROOT / "harness" / "presets.json").read_text())
    assert f"--presets {','.join(presets)} " in command
