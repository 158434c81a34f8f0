"""Our BFCL runner against Inspect's (``inspect_evals``) on the same items, the same model and
the same server: where the two harnesses' verdicts part, and why.

The peer run's file (``evals/bfcl/peer.py`` writes it) holds, per item, what Inspect sent, what
the server answered, what Inspect parsed of it and what Inspect's scorer said, with the request
our runner sends for the item beside it; our run's file holds our reply and BFCL's own verdict.
Each item whose verdicts differ gets one cause, read off those fields in this order:

- **parsing**: Inspect's parsed calls are not the calls the server sent (a parse error, or a
  call lost or changed on the way);
- **prompting**: the server's replies differ and so do the requests (the paths where they
  differ are listed: a tool's schema, a description, the messages);
- **generation**: the same request got another reply (the server, or the model, changed
  between the runs);
- **checking**: the same calls, judged apart by the two checkers (both explanations shown).

Agreement is counted over every item both runs judged, with its Wilson interval, and the two
accuracies are tested pair by pair (the exact sign test on the items where they differ).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evals.errors import EvalError
from evals.markdown import clip, table
from evals.record.bfcl import ItemRecord, read_items
from evals.report.pairing import Paired, paired_outcomes
from evals.stats import wilson
from lab.report.docs import fill

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "results" / "bfcl" / "inspect" / "peer.jsonl"
DOCS = ROOT / "docs" / "bfcl.md"
BLOCK = "bfcl-peer"
CAUSES = ("parsing", "prompting", "generation", "checking")
# How many differing paths of two requests an explanation names.
SHOWN_DIFFERENCES = 4
CELL_CHARS = 200  # a table cell of the partings, with its ellipsis


@dataclass(frozen=True)
class PeerItem:
    """One item as the two harnesses saw it."""

    id: str
    category: str
    ours: bool
    theirs: bool
    our_calls: list[tuple[str, Any]]
    server_calls: list[tuple[str, Any]] | None  # what the server sent Inspect
    their_calls: list[tuple[str, Any]]  # what Inspect parsed of it
    parse_errors: list[str]
    our_errors: list[str]
    their_explanation: str
    request_differences: list[str]
    cause: str | None = None  # None where the verdicts agree


@dataclass(frozen=True)
class PeerComparison:
    header: dict[str, Any]
    ours_label: str
    items: list[PeerItem]
    paired: Paired
    same_reply: int  # items whose server reply was the same in both runs
    same_request: int
    left_out: list[str] = field(default_factory=list)  # ours only, or no verdict in one


def _arguments(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _calls(pairs: list[tuple[str, Any]]) -> list[str]:
    return sorted(json.dumps([n, a], sort_keys=True) for n, a in pairs)


def _same(a: list[tuple[str, Any]] | None, b: list[tuple[str, Any]] | None) -> bool:
    return a is not None and b is not None and _calls(a) == _calls(b)


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as ``path: a ≠ b`` (keys one side lacks included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else str(key)
            if key not in a:
                out.append(f"{where}: only Inspect's")
            elif key not in b:
                out.append(f"{where}: only ours")
            else:
                out.extend(differences(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]")
        ]
    if a != b:
        return [f"{path}: {json.dumps(a)[:80]} ≠ {json.dumps(b)[:80]}"]
    return []


def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": m.get("role"), "content": m.get("content")} for m in request.get("messages", [])
    ]


def request_differences(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> list[str]:
    """Where the two requests for one item differ: their messages (role and text) and their
    tools; the client's own fields (ids, stream options) are not compared."""
    if ours is None or theirs is None:
        return ["a request is missing"]
    return differences(
        {"messages": _messages(ours), "tools": ours.get("tools") or []},
        {"messages": _messages(theirs), "tools": theirs.get("tools") or []},
    )


def _cause(item: PeerItem) -> str:
    if item.parse_errors or (
        item.server_calls is not None and not _same(item.server_calls, item.their_calls)
    ):
        return "parsing"
    if not _same(item.our_calls, item.server_calls):
        return "prompting" if item.request_differences else "generation"
    return "checking"


def _verdict(value: Any) -> bool | None:
    if value in (1, 1.0, "C", True):
        return True
    if value in (0, 0.0, "I", False):
        return False
    return None


def read_peer(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if not lines or "header" not in lines[0]:
        raise EvalError(f"{path}: not a peer run file (no header line)")
    return lines[0]["header"], lines[1:]


def compare(peer_file: Path) -> PeerComparison:
    """The peer run of ``peer_file`` item by item against the run its header names."""
    header, lines = read_peer(peer_file)
    ours_file = (peer_file.parent / header["ours"]).resolve()
    ours = {r.id: r for r in read_items(ours_file)}
    items: list[PeerItem] = []
    left_out: list[str] = []
    for line in lines:
        record: ItemRecord | None = ours.get(line["id"])
        theirs = _verdict(line.get("value"))
        if record is None or record.request_error or theirs is None or line.get("error"):
            left_out.append(line["id"])
            continue
        server = line.get("server_calls")
        item = PeerItem(
            id=line["id"],
            category=line["category"],
            ours=record.valid,
            theirs=theirs,
            our_calls=[(c.name, _arguments(c.arguments)) for c in record.calls],
            server_calls=None
            if server is None
            else [(c["name"], _arguments(c["arguments"])) for c in server],
            their_calls=[(c["function"], c["arguments"]) for c in line.get("calls", [])],
            parse_errors=[c["parse_error"] for c in line.get("calls", []) if c.get("parse_error")],
            our_errors=[str(e) for e in record.errors],
            their_explanation=str(line.get("explanation") or ""),
            request_differences=request_differences(line.get("our_request"), line.get("request")),
        )
        if item.ours != item.theirs:
            item = replace(item, cause=_cause(item))
        items.append(item)
    left_out += sorted(set(ours) - {line["id"] for line in lines})
    if not items:
        raise EvalError(f"{peer_file}: no item judged by both harnesses")
    label = str(next(iter(ours.values())).spec.label or ours_file.stem)
    paired = paired_outcomes(
        {i.id: [i.ours] for i in items},
        {i.id: [i.theirs] for i in items},
        label_a="ours (BFCL's checker)",
        label_b="Inspect's BFCL",
    )
    return PeerComparison(
        header=header,
        ours_label=label,
        items=items,
        paired=paired,
        same_reply=sum(_same(i.our_calls, i.server_calls) for i in items),
        same_request=sum(not i.request_differences for i in items),
        left_out=left_out,
    )


def _show(calls: list[tuple[str, Any]] | None) -> str:
    if calls is None:
        return "–"
    if not calls:
        return "no call"
    return "; ".join(f"`{n}({json.dumps(a, sort_keys=True)[:120]})`" for n, a in calls)


def summary(c: PeerComparison) -> str:
    """The agreement table, the paired test and the causes: what docs/bfcl.md quotes."""
    agree = sum(i.ours == i.theirs for i in c.items)
    rate = wilson(agree, len(c.items))
    rows = []
    for category in [*sorted({i.category for i in c.items}), "all"]:
        mine = [i for i in c.items if category in ("all", i.category)]
        both = sum(i.ours == i.theirs for i in mine)
        rows.append(
            [
                category,
                str(len(mine)),
                str(sum(i.ours for i in mine)),
                str(sum(i.theirs for i in mine)),
                f"{both}/{len(mine)}" + (f" = {rate.interval()}" if category == "all" else ""),
            ]
        )
    p = c.paired
    counts = {cause: sum(i.cause == cause for i in c.items) for cause in CAUSES}
    lines = [
        table(
            ["category", "items", "right: ours", "right: Inspect's", "same verdict [95 % Wilson]"],
            rows,
        ).rstrip("\n"),
        "",
        f"Paired over the {p.tasks} items: Inspect's − ours = {p.difference:+.1f} points "
        f"[{p.low:+.1f}, {p.high:+.1f}], exact sign test p = {p.p_value:.2g} "
        f"({len(p.only_a)} right only in ours, {len(p.only_b)} only in Inspect's). "
        f"The server's reply was the same call(s) in both runs for {c.same_reply} of "
        f"{len(c.items)} items; the requests were the same (messages and tools) for "
        f"{c.same_request}. Where the verdicts part: "
        + ", ".join(f"{cause} {counts[cause]}" for cause in CAUSES)
        + ".",
    ]
    if c.left_out:
        lines.append(
            f"Left out ({len(c.left_out)}: a request error, or no verdict in one run): "
            + ", ".join(c.left_out[:10])
        )
    return "\n".join(lines) + "\n"


def markdown(c: PeerComparison) -> str:
    """The comparison as the page ``results/bfcl/inspect/peer.md`` shows it."""
    h = c.header
    lines = [
        "# BFCL: our runner against Inspect's, on the same items through the same server",
        "",
        f"Ours: `{h['ours']}` ({c.ours_label}; BFCL's own AST checker). Inspect: "
        f"`{h['task']}` version {h['task_version']} (inspect_evals {h['inspect_evals']}, "
        f"inspect_ai {h['inspect_ai']}), model `{h['model']}`, log `{h['log']}`. Written by "
        "`make bfcl-inspect`; `python -m lab bfcl-peer-report` rebuilds this page.",
        "",
        summary(c).rstrip("\n"),
        "",
        "## Where the verdicts part",
        "",
        "Each cause read off the two files: parsing (Inspect's parsed calls are not what the "
        "server sent), prompting (the requests differ, and so do the replies), generation (the "
        "same request got another reply), checking (the same calls, judged apart).",
        "",
    ]
    differing = [i for i in c.items if i.cause is not None]
    rows = [
        [
            i.id,
            "✓" if i.ours else "✗",
            "✓" if i.theirs else "✗",
            i.cause or "",
            _show(i.our_calls),
            _show(i.server_calls) if i.cause != "checking" else "the same",
            clip("; ".join(i.our_errors) or "–", CELL_CHARS),
            clip(i.their_explanation or "–", CELL_CHARS),
            clip("; ".join(i.request_differences[:SHOWN_DIFFERENCES]) or "the same", CELL_CHARS),
        ]
        for i in differing
    ]
    lines.append(
        table(
            [
                "item",
                "ours",
                "Inspect's",
                "cause",
                "our reply",
                "Inspect's reply",
                "BFCL's checker says",
                "Inspect's scorer says",
                "requests differ at",
            ],
            rows,
        ).rstrip("\n")
    )
    return "\n".join(lines) + "\n"


def write(peer_file: Path, out: Path, docs: Path | None = DOCS) -> PeerComparison:
    """The page beside the peer run's file, and the summary in ``docs``' block (when the
    peer run is the committed one)."""
    comparison = compare(peer_file)
    out.write_text(markdown(comparison), encoding="utf-8")
    if docs is not None and peer_file.resolve() == COMMITTED.resolve():
        fill(docs, BLOCK, summary(comparison))
    return comparison
