"""BFCL run files summarized: accuracy per category with a 95 % Wilson interval and its
sample size, beside the published figures of the nearest model, and one comparison table of
every run in a folder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.bfcl.items import RELEVANCE
from evals.markdown import table
from evals.numbers import mean, p95
from evals.record import run_files
from evals.record.bfcl import ItemRecord, read_items
from evals.stats import wilson

# BFCL's published figures, kept with the BFCL adapter (evals/bfcl/published.json).
PUBLISHED = Path(__file__).parents[1] / "bfcl" / "published.json"


@dataclass(frozen=True)
class Rate:
    correct: int
    n: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def wilson(self) -> tuple[float, float]:
        """The 95 % Wilson score interval of the accuracy."""
        found = wilson(self.correct, self.n)
        return (found.low, found.high)

    def record(self) -> dict[str, Any]:
        low, high = self.wilson()
        return {
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci95": [low, high],
        }

    def cell(self) -> str:
        low, high = self.wilson()
        return f"{100 * self.accuracy:.1f} [{100 * low:.1f}, {100 * high:.1f}] n={self.n}"


def published() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    return data


def nearest(model: str | None) -> dict[str, Any] | None:
    """The published model whose size the served model's name carries, if any."""
    name = (model or "").lower()
    return next((m for m in published()["models"] if m["size"] in name), None)


def published_figure(entry: dict[str, Any], category: str) -> float | None:
    column = published()["columns"].get(category)
    figure = entry["accuracy"].get(column) if column else None
    return None if figure is None else float(figure)


def categories_of(records: Sequence[ItemRecord]) -> list[str]:
    """The categories the records hold, the call categories first and relevance after."""
    found = list(dict.fromkeys(r.category for r in records))
    return [c for c in found if c not in RELEVANCE] + [c for c in found if c in RELEVANCE]


def call_mean(per_category: dict[str, dict[str, Any]]) -> float | None:
    """The unweighted mean accuracy of the call categories that have an answered item, as
    BFCL takes its means (never pooled over items; relevance kept apart)."""
    rates = [r["accuracy"] for c, r in per_category.items() if c not in RELEVANCE and r["n"]]
    return sum(rates) / len(rates) if rates else None


def summarize(records: Sequence[ItemRecord]) -> dict[str, Any]:
    first = records[0].header if records else {}
    latencies = [r.latency_ms for r in records if r.latency_ms is not None]
    # An item whose request failed was never answered: it is no "no call" (which irrelevance
    # would credit), and it is left out of every rate, counted under request errors.
    answered = [r for r in records if r.request_error is None]
    per_category = {
        c: Rate(sum(r.valid for r in answered if r.category == c),
                sum(r.category == c for r in answered)).record()
        for c in categories_of(records)
    }  # fmt: skip
    near = nearest(first.get("model"))
    keys = ("label", "model", "model_sha256", "backend", "tool_grammar", "draft", "base_url",
            "servers",
            "bfcl_eval", "checker_model", "seed", "limit", "max_tokens", "machine",
            "code_version")  # fmt: skip
    return {
        **{k: first.get(k) for k in keys},
        "items": len(records),
        "categories": per_category,
        # BFCL's way: each call category weighs the same, whatever its number of items.
        "call_mean": call_mean(per_category),
        "calls": sum(len(r.calls) for r in records),
        "invalid_calls": sum(p is not None for r in records for p in r.schema_problems),
        "request_errors": sum(r.request_error is not None for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "mean_turn_ms": mean(latencies),
        "p95_turn_ms": p95(latencies),
        "published": None
        if near is None
        else {
            "model": near["model"],
            "source": published()["source"],
            "checked_against_live_leaderboard": published()["checked_against_live_leaderboard"],
            "accuracy": {c: published_figure(near, c) for c in per_category},
        },
    }


def percent(figure: float | None) -> str:
    return "" if figure is None else f"{figure:.1f}"


def summary_markdown(name: str, summary: dict[str, Any]) -> str:
    near = summary["published"]
    head = ["category", "accuracy % [95 % Wilson] n", "correct"]
    if near:
        head.append(f"published: {near['model']}")
    rows = []
    for category, rate in summary["categories"].items():
        row = [category, Rate(rate["correct"], rate["n"]).cell(), rate["correct"]]
        if near:
            row.append(percent(near["accuracy"].get(category)))
        rows.append(row)
    mean = summary.get("call_mean")
    if mean is not None:
        rows.append(["mean of the call categories (unweighted, relevance apart)",
                     f"{100 * mean:.1f}", "", *([""] if near else [])])  # fmt: skip
    mean_turn = summary["mean_turn_ms"]
    lines = [
        f"# BFCL: {name}",
        "",
        f"Model `{summary['model']}` (sha256 `{summary['model_sha256']}`), backend "
        f"`{summary['backend']}`, tool grammar `{summary['tool_grammar']}`; bfcl-eval "
        f"{summary['bfcl_eval']}, its AST checker; sample: "
        + ("every item" if summary["limit"] is None else f"{summary['limit']} per category")
        + f", seed {summary['seed']}; reply cap: {_cap(summary.get('max_tokens'))}.",
        "",
        table(head, rows),
        f"calls={summary['calls']}  failing the tool's schema={summary['invalid_calls']}  "
        f"request errors={summary['request_errors']}  tokens in={summary['prompt_tokens']} "
        f"out={summary['completion_tokens']}  mean turn="
        + ("n/a" if mean_turn is None else f"{mean_turn:,.0f}ms"),
        "",
    ]
    if near:
        lines += [source_note(), ""]
    return "\n".join(lines)


def _cap(max_tokens: int | None) -> str:
    return "the server's default" if max_tokens is None else f"{max_tokens} tokens"


def source_note() -> str:
    data = published()
    checked = (
        ""
        if data["checked_against_live_leaderboard"]
        else " Not checked against the live leaderboard."
    )
    multi = f" {data['multi_turn_source']}." if data.get("multi_turn_source") else ""
    return f"Published figures: {data['source']}.{checked} {data['note']}{multi}"


def write_summaries(run_file: Path, elapsed_ms: float | None = None) -> dict[str, Any]:
    """``RUN.summary.json`` and ``RUN.summary.md`` beside the run file."""
    summary = summarize(read_items(run_file))
    if elapsed_ms is not None:
        summary["elapsed_ms"] = elapsed_ms
    stem = run_file.with_suffix("")
    Path(f"{stem}.summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    Path(f"{stem}.summary.md").write_text(
        summary_markdown(run_file.name, summary), encoding="utf-8"
    )
    return summary


def comparison(files: list[Path]) -> str:
    """Every run by category (relevance after the call categories) with the unweighted mean of
    its call categories, and the published figures, in one Markdown table."""
    runs = [(f, read_items(f)) for f in files]
    columns = categories_of([r for _, records in runs for r in records])
    head = ["run", "model (sha256)", "tool grammar", "reply cap", *columns, "call mean",
            "request errors"]  # fmt: skip
    rows = []
    for path, records in runs:
        summary = summarize(records)
        rates = summary["categories"]
        sha = (summary.get("model_sha256") or "")[:12]
        cap = summary.get("max_tokens")
        mean = summary["call_mean"]
        rows.append([path.stem, f"{summary.get('model')} ({sha})", summary.get("tool_grammar"),
                     "default" if cap is None else cap,
                     *(Rate(rates[c]["correct"], rates[c]["n"]).cell()
                       if c in rates and rates[c]["n"] else "" for c in columns),
                     "" if mean is None else f"{100 * mean:.1f}",
                     summary["request_errors"]])  # fmt: skip
    for entry in published()["models"]:
        rows.append([f"published: {entry['model']}", "", "", "",
                     *(percent(published_figure(entry, c)) for c in columns), "", ""])  # fmt: skip
    return "\n".join(
        [
            "# BFCL through this stack, by category",
            "",
            "Accuracy in percent as judged by BFCL's own checkers (bfcl-eval: the AST checker "
            "per item, the multi-turn checker per conversation), with its 95 % "
            "Wilson interval and the number of answered items; relevance (whether to call at "
            "all) after the call categories, apart, as BFCL keeps it; the call mean is the "
            "unweighted mean of the call categories a run has, as BFCL takes its means; an "
            "item whose request failed counts in no rate, only under request errors. "
            "`python -m evals bfcl` writes this table.",
            "",
            table(head, rows),
            source_note(),
            "",
        ]
    )


def write_comparison(folder: Path) -> Path:
    out = folder / "summary.md"
    out.write_text(comparison(run_files([folder])), encoding="utf-8")
    return out


def total_line(summary: dict[str, Any]) -> str:
    cats = "  ".join(f"{c}={r['correct']}/{r['n']}" for c, r in summary["categories"].items())
    mean = summary["call_mean"]
    mean_turn = summary["mean_turn_ms"]
    return (
        f"TOTAL {cats}  call-category mean="
        + ("n/a" if mean is None else f"{100 * mean:.1f} %")
        + "  invalid calls="
        f"{summary['invalid_calls']}  request errors={summary['request_errors']}  mean turn="
        + ("n/a" if mean_turn is None else f"{mean_turn:,.0f}ms")
    )


def summarize_bfcl_run(run_file: Path, elapsed_ms: float | None = None) -> str:
    """The run's summaries and its folder's comparison written; what the run prints last
    (given to ``run_bfcl`` as ``summarize``)."""
    summary = write_summaries(run_file, elapsed_ms)
    return f"{total_line(summary)}\nwrote {write_comparison(run_file.parent)}"
