"""Every benchmark part by name: run the ones asked for, keep the others' last figures, write
results/bench.json and results/bench.md."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

from evals.record import code_version, machine
from lab.report.docs import fill
from lab.studies.serving import (
    analyst_turns,
    draft,
    engines,
    grammar,
    ladder,
    overhead,
    peer,
    prefix,
    scale,
    serving,
    slots_report,
    tau2_replay,
    throughput,
)
from lab.studies.serving.common import Echo, Part
from serve_local.models import QWEN_CODER, resolve

# The order ``make bench`` runs them in: the quick ones first.
PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        overhead.PART,
        throughput.PART,
        prefix.PART,
        grammar.PART,
        serving.PART,
        peer.PART,
        engines.PART,
        scale.PART,
        slots_report.PART,
        ladder.PART,
        draft.PART,
        analyst_turns.PART,
        tau2_replay.PART,
        tau2_replay.PART_TWO,
    )
}
# The order bench.md shows them in: the serving comparison first.
SHOWN = (
    "serving",
    "peer",
    "ladder",
    "draft",
    "grammar",
    "backends",
    "prefix",
    "analyst",
    "harness",
    "throughput",
    "scale",
    "slots",
    "tau2",
    "tau2-two",
)


# What names where a part was measured: the header's, and each part's own (``measured``).
MEASURED = ("machine", "versions", "code_version")


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for module in ("llama_cpp", "torch", "transformers", "fastapi", "uvicorn"):
        try:
            found[module] = __import__(module).__version__
        except ImportError:
            found[module] = None
    return found


def run_bench(parts: list[str], out: Path, echo: Echo = print) -> dict[str, Any]:
    report: dict[str, Any] = {
        "machine": machine(),
        "versions": versions(),
        "code_version": code_version(),
        "model": QWEN_CODER,
        "model_sha256": resolve(QWEN_CODER).sha256,
        "parts": {},
    }
    previous = out / "bench.json"
    if previous.exists():
        # Parts run alone keep the others' last figures, each naming the machine and code it
        # was measured on (``measured``; the header names this run's).
        kept = json.loads(previous.read_text())
        report["parts"] = kept.get("parts", {})
        for figures in report["parts"].values():
            figures.setdefault("measured", {k: kept.get(k) for k in MEASURED})
    for name in parts:
        echo(f"{name} ...")
        started = time.perf_counter()
        report["parts"][name] = PARTS[name].run(echo)
        report["parts"][name]["seconds"] = round(time.perf_counter() - started, 1)
        report["parts"][name]["measured"] = {k: report[k] for k in MEASURED}
    out.mkdir(parents=True, exist_ok=True)
    previous.write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "bench.md").write_text(markdown(report))
    write_docs(report)
    return report


def rerender(out: Path) -> None:
    """bench.md and the docs' blocks again from the figures kept in bench.json, the verdicts
    of a part's committed run files read again from those files (``Part.rescored``)."""
    kept = out / "bench.json"
    report = json.loads(kept.read_text())
    for name, part in PARTS.items():
        if part.rescored is not None and name in report["parts"]:
            report["parts"][name] = part.rescored(report["parts"][name])
    kept.write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "bench.md").write_text(markdown(report))
    write_docs(report)


def doc_blocks(report: dict[str, Any]) -> list[tuple[Path, str, str]]:
    """Every docs block the kept figures write: (page, block name, text)."""
    return [
        found
        for name, part in PARTS.items()
        if part.docs is not None and name in report["parts"]
        for found in part.docs(report["parts"][name])
    ]


def write_docs(report: dict[str, Any]) -> None:
    for page, name, text in doc_blocks(report):
        fill(page, name, text)


def markdown(report: dict[str, Any]) -> str:
    m, parts = report["machine"], report["parts"]
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {m['cores']} cores, {m['cpu']}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items())
        + ". "
        f"Model `{report['model']}` sha256 `{report['model_sha256']}`. Code "
        f"`{report['code_version']}`. Produced by `make bench`; medians unless said otherwise.",
        "",
    ]
    for name in SHOWN:
        if name in parts:
            part = PARTS[name]
            lines += [f"## {part.heading}", ""] if part.heading else []
            lines += part.render(parts[name])
            lines += _measured_apart(report, parts[name].get("measured"), lines[-1])
            lines += _gap(lines[-1])  # before the next section
    return "\n".join(lines)


def _gap(before: str) -> list[str]:
    """A blank line after ``before``, unless it is one or ends with one (a table's text)."""
    return [] if before == "" or before.endswith("\n") else [""]


def _measured_apart(
    report: dict[str, Any], measured: dict[str, Any] | None, before: str
) -> list[str]:
    """A line naming the machine, versions and code a part was measured on, where the
    header's differ (a machine by its cores and CPU); ``before``: the line above it."""
    if not measured:
        return []

    def seen(where: dict[str, Any]) -> tuple[Any, ...]:
        m = where.get("machine") or {}
        return m.get("cores"), m.get("cpu"), where.get("versions"), where.get("code_version")

    if seen(measured) == seen(report):
        return []
    m = measured.get("machine") or {}
    versions = ", ".join(f"{k} {v}" for k, v in (measured.get("versions") or {}).items())
    return [
        *_gap(before),
        f"Measured apart from the header's run: {m.get('cores')} cores, {m.get('cpu')}; "
        f"{versions}; code `{measured.get('code_version')}`.",
        "",
    ]
