"""Inspect's own BFCL (``inspect_evals``) as a peer harness: the items of one of our BFCL runs
asked again through the same server by Inspect's implementation, judged by Inspect's scorer.

Inspect runs in its own virtualenv (``.venv-inspect``, made by ``make bfcl-inspect``) as a
subprocess: ``inspect eval inspect_evals/bfcl`` with the item ids of our run, the server as
an OpenAI-compatible service (``openai-api/loopbench/MODEL``), one request at a time as our
run asked them. Its data is BFCL's own, copied from the ``bfcl-eval`` package of the BFCL
virtualenv into a cache folder the run owns (Inspect would clone BFCL's repository otherwise,
and nothing is downloaded here). Its log is kept, and read back through
``inspect_items.py`` (run by Inspect's interpreter) as one JSON line per item, to which the
request our runner sent for the same item is added, so that the comparison
(``lab/report/bfcl_peer.py``) needs neither virtualenv.

Inspect's single-turn BFCL scorer matches parsed arguments against BFCL's possible answers
and runs none of the model's text; the subprocess gets no secret and a home folder of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.bfcl.bridge import ROOT, Checker, bfcl_python
from evals.bfcl.items import MULTI_TURN, Item
from evals.errors import EvalError
from evals.record.bfcl import ItemRecord

ITEMS_SCRIPT = Path(__file__).with_name("inspect_items.py")
DEFAULT_PYTHON = ROOT / ".venv-inspect" / "bin" / "python"
# The service name Inspect's openai-api provider reads LOOPBENCH_BASE_URL and _API_KEY by.
SERVICE = "loopbench"
TASK = "inspect_evals/bfcl"
# A whole run of 100 items through one slot takes minutes; this bounds a stalled one.
RUN_TIMEOUT_S = 3 * 3600


class InspectUnavailable(EvalError):
    """Inspect's virtualenv is missing, or Inspect's run failed."""


def inspect_python() -> Path:
    return Path(os.environ.get("INSPECT_PYTHON") or DEFAULT_PYTHON)


def _need(python: Path) -> None:
    if not python.exists():
        raise InspectUnavailable(
            f"Inspect's BFCL runs in its own virtualenv and {python} is missing: `make "
            "bfcl-inspect` creates it (or set INSPECT_PYTHON to a Python with inspect-evals)."
        )


def bfcl_data() -> Path:
    """The data folder of the ``bfcl-eval`` package in the BFCL virtualenv."""
    python = bfcl_python()
    if not python.exists():
        raise InspectUnavailable(
            f"BFCL's data comes from the bfcl-eval package and {python} is missing: "
            "`make bfcl-venv` creates it."
        )
    where = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import importlib.util as u; "
            "print(u.find_spec('bfcl_eval').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if where.returncode != 0:
        raise InspectUnavailable(f"{python}: bfcl-eval is not installed ({where.stderr.strip()})")
    return Path(where.stdout.strip()) / "data"


def fill_cache(cache: Path, categories: list[str]) -> Path:
    """Inspect's cache folder (``INSPECT_EVALS_CACHE_DIR``) with BFCL's files for
    ``categories``, copied from bfcl-eval's data: the same files at the same names."""
    data, folder = bfcl_data(), cache / "BFCL"
    for category in categories:
        name = f"BFCL_v4_{category}.json"
        for part in ("", "possible_answer"):
            source = data / part / name
            if part and category == "irrelevance":
                continue  # no ground truth: the right answer is no call
            if not source.is_file():
                raise InspectUnavailable(f"{source}: not in bfcl-eval's data")
            (folder / part).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, folder / part / name)
    return folder


def peer_ids(records: list[ItemRecord]) -> tuple[list[str], list[str]]:
    """The single-turn items of our run (ids, and their categories in order of first use)."""
    single = [r for r in records if r.category not in MULTI_TURN]  # one request, no tool run
    ids = [r.id for r in single]
    categories = list(dict.fromkeys(r.category for r in single))
    if not ids:
        raise EvalError("the run has no single-turn item to ask Inspect's BFCL")
    return ids, categories


def run_inspect(
    ids: list[str],
    categories: list[str],
    *,
    base_url: str,
    model: str,
    log_dir: Path,
    max_connections: int = 1,
    echo: Callable[[str], None] = print,
) -> Path:
    """Inspect's BFCL on ``ids`` against ``base_url``; the path of its log (``.eval``)."""
    python = inspect_python()
    _need(python)
    log_dir.mkdir(parents=True, exist_ok=True)
    before = set(log_dir.glob("*.eval"))
    with tempfile.TemporaryDirectory(prefix="loopbench-inspect-") as home:
        cache = Path(home) / "cache"
        fill_cache(cache, categories)
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")},
            "HOME": home,
            "TMPDIR": home,
            "INSPECT_EVALS_CACHE_DIR": str(cache),
            f"{SERVICE.upper()}_BASE_URL": base_url,
            f"{SERVICE.upper()}_API_KEY": "local",
        }
        command = [
            str(python),
            "-m",
            "inspect_ai",
            "eval",
            TASK,
            "-T",
            f"categories={','.join(categories)}",
            "--sample-id",
            ",".join(ids),
            "--model",
            f"openai-api/{SERVICE}/{model}",
            "--max-connections",
            str(max_connections),
            "--log-dir",
            str(log_dir.resolve()),
            "--log-format",
            "eval",
            "--display",
            "plain",
        ]
        echo(f"inspect eval {TASK}: {len(ids)} items of {', '.join(categories)} on {base_url}")
        done = subprocess.run(command, env=env, cwd=home, timeout=RUN_TIMEOUT_S, check=False)
    logs = sorted(set(log_dir.glob("*.eval")) - before)
    if done.returncode != 0 or not logs:
        raise InspectUnavailable(
            f"inspect eval {TASK} exited with code {done.returncode}"
            + ("" if logs else " and wrote no log")
        )
    return logs[-1]


def log_items(log: Path) -> list[dict[str, Any]]:
    """The lines ``inspect_items.py`` reads from ``log``: a header, then one per item."""
    python = inspect_python()
    _need(python)
    read = subprocess.run(
        [str(python), "-I", str(ITEMS_SCRIPT), str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    if read.returncode != 0:
        why = read.stderr.strip().splitlines()
        raise InspectUnavailable(f"{log}: not read ({why[-1] if why else 'no message'})")
    return [json.loads(line) for line in read.stdout.splitlines() if line.strip()]


async def our_requests(ids: list[str], categories: list[str]) -> dict[str, dict[str, Any]]:
    """What our runner sends for each item: BFCL's own messages and tools, from its checker."""
    async with Checker() as checker:
        loaded = await checker.load(categories)
    items = {i.id: i for i in (Item.from_checker(raw) for raw in loaded["items"])}
    missing = [i for i in ids if i not in items]
    if missing:
        raise EvalError(f"not in BFCL's data: {', '.join(missing[:5])}")
    return {i: {"messages": items[i].messages, "tools": items[i].tools} for i in ids}


def write_peer_items(
    out: Path, log: Path, lines: list[dict[str, Any]], ours: dict[str, dict[str, Any]], run: Path
) -> Path:
    """The peer run's file: a header (where its log is, which of our runs it pairs with, when),
    then each item as Inspect saw it with ``our_request`` beside it."""
    header = {
        **lines[0]["header"],
        "log": os.path.relpath(log, out.parent),
        "ours": os.path.relpath(run, out.parent),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        f.write(json.dumps({"header": header}) + "\n")
        for line in lines[1:]:
            f.write(json.dumps({**line, "our_request": ours.get(line["id"])}) + "\n")
    return out
