"""``python -m evals view``: the HTML report, read as a person reads it, in a real browser."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from evals.report.compare import load_runs
from evals.report.stats import wilson
from evals.report.view import render, write_report
from evals.run import records
from evals.run.records import kept_file, read_records
from evals.run.runner import EvalSettings, run_eval
from evals.tasks import generate

CHROMIUM = shutil.which("chromium")
# The machine has no network: Playwright cannot fetch its own browser, so it drives the system's.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_browser = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on this machine: make chromium installs it (root or sudo), or apt-get",
)
TIMINGS = {"prompt_n": 30, "cache_n": 60, "predicted_n": 10, "prompt_ms": 150.0}


def _eval(url: str, folder: Path, model: str, **extra: Any) -> Path:
    out = folder / f"{model.removeprefix('scripted:')}.jsonl"
    settings = EvalSettings(base_url=url, model=model, out=out, label=model, **extra)
    return asyncio.run(run_eval(settings, echo=lambda _: None))


def _add_timings(run_file: Path) -> None:
    """What a local model server reports per turn (the scripted provider reports none)."""
    first = read_records(run_file)[0]
    path = kept_file(run_file, f"{first['run_id']}.json")
    assert path is not None
    state = json.loads(path.read_text())
    state["turn_records"][0]["timings"] = {**TIMINGS, "predicted_ms": 250.0}
    state["turn_records"][1]["timings"] = {**TIMINGS, "cache_n": 10, "predicted_ms": 50.0}
    path.write_text(json.dumps(state))


@pytest.fixture(scope="module")
def runs(scripted_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    _add_timings(_eval(scripted_url, folder, "scripted:oracle"))
    _eval(scripted_url, folder, "scripted:runaway", max_turns=2)
    _eval(scripted_url, folder, "scripted:destructive")
    return folder


@pytest.fixture(scope="module")
def report(runs: Path) -> Path:
    return write_report([runs], runs.parent / "report.html")


def test_every_cell_links_to_a_transcript_of_that_run_and_task(report: Path) -> None:
    html = report.read_text()
    for run, model in enumerate(["destructive", "oracle", "runaway"]):
        for task in ["timeout", "count", "notes", "read_all", "largest", "rotate"]:
            row = html.split(f'<tr data-task="{task}">')[1].split("</tr>")[0]
            cell = row.split(f'<td data-run="{run}">')[1].split("</td>")[0]
            anchor = cell.split('href="#')[1].split('"')[0]
            section = html.split(f'id="{anchor}"')[1].split("</section>")[0]
            assert f'data-task="{task}"' in section and f"scripted:{model}" in section


def test_a_rejected_call_shows_its_reason(report: Path) -> None:
    html = report.read_text()
    assert "rejected: This evaluation runs read-only; no file may be changed." in html
    assert "delete_file" in html


def test_the_report_needs_nothing_from_outside_the_file(report: Path) -> None:
    html = report.read_text()
    for attribute in ("src=", 'href="http', "href='http", "@import", "url("):
        assert attribute not in html, attribute


def test_gzipped_state_files_are_read_back(
    scripted_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "COMPRESS_ABOVE", 0)
    run_file = _eval(scripted_url, tmp_path, "scripted:plan")
    record = read_records(run_file)[0]
    assert record["trace_path"].endswith(".trace.jsonl.gz")
    folder = records.task_folder(run_file)
    assert (folder / f"{record['run_id']}.json.gz").exists()
    assert not (folder / f"{record['run_id']}.json").exists()
    html = render([run_file])
    assert "list_files" in html and f"{record['run_id']}.json.gz" in html


def test_no_run_files_still_makes_a_page(tmp_path: Path) -> None:
    assert "No run files yet" in render([tmp_path])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, report: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    """The report opened from file://, with every request and console complaint collected."""
    page = browser.new_page()
    requests: list[str] = []
    complaints: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on(
        "console", lambda m: complaints.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: complaints.append(str(e)))
    page.goto(report.as_uri())
    yield page, requests, complaints
    page.close()


@needs_browser
def test_clicking_a_cell_opens_its_transcript(
    page: tuple[Any, list[str], list[str]], report: Path
) -> None:
    tab, requests, complaints = page
    assert tab.locator(".transcript:visible").count() == 0
    tab.locator('tr[data-task="timeout"] td[data-run="2"] a').click()
    shown = tab.locator(".transcript:visible")
    assert shown.count() == 1
    assert "scripted:runaway" in shown.locator("h2").inner_text()
    assert shown.locator(".tool-name").all_inner_texts() == ["list_files", "list_files"]
    failed = shown.locator(".check.failed")
    assert failed.count() >= 1 and "status" in failed.first.inner_text()
    assert "max_turns" in shown.inner_text()
    assert complaints == []
    assert requests == [report.as_uri()]


@needs_browser
def test_the_timings_bar_is_drawn_to_scale(page: tuple[Any, list[str], list[str]]) -> None:
    tab, _, complaints = page
    tab.locator('tr[data-task="timeout"] td[data-run="1"] a').click()
    turns = tab.locator(".transcript:visible .turn")
    first, second = turns.nth(0), turns.nth(1)
    assert "prompt_n 30 · cache_n 60 · predicted_n 10 · 400 ms" in first.inner_text()

    def width(turn: Any, segment: str) -> float:
        return float(turn.locator(f".seg.{segment}").bounding_box()["width"])

    bar = float(first.locator(".bar").bounding_box()["width"])
    assert width(first, "cache") == pytest.approx(0.6 * bar, abs=1)
    assert width(first, "predicted") == pytest.approx(0.1 * bar, abs=1)
    # The second turn has half the tokens of the first, so its bar is half as long.
    filled = sum(width(second, s) for s in ("cache", "prompt", "predicted"))
    assert filled == pytest.approx(0.5 * bar, abs=1.5)
    assert "no server timings" in turns.nth(2).inner_text()
    assert complaints == []


@needs_browser
def test_filters_hide_runs_and_tasks(page: tuple[Any, list[str], list[str]]) -> None:
    tab, _, complaints = page
    tab.locator('.run-filter[value="2"]').uncheck()
    assert tab.locator('#comparison [data-run="2"]:visible').count() == 0
    assert tab.locator('#comparison td[data-run="1"]:visible').count() == 6
    tab.locator("#task-filter").select_option("count")
    assert tab.locator("#comparison tbody tr:visible").all_inner_texts()[0].startswith("count")
    assert tab.locator("#comparison tbody tr:visible").count() == 1
    tab.locator('.run-filter[value="2"]').check()
    assert tab.locator('#comparison td[data-run="2"]:visible').count() == 1
    assert complaints == []


# -- the leaderboard and accuracy per kind ---------------------------------------------------


@pytest.fixture(scope="module")
def board_runs(scripted_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of different accuracy over files6, and the oracle over a generated set. Made in a
    thread of their own: the browser's driver may already hold this thread's event loop."""
    folder = tmp_path_factory.mktemp("board")
    generated = generate.write(0, len(generate.KINDS), folder.parent / "gen.json")
    settings = EvalSettings(
        base_url=scripted_url,
        model="scripted:oracle",
        tasks=generated,
        out=folder / "zz-generated.jsonl",
        label="gen",
    )

    def make() -> None:
        _eval(scripted_url, folder, "scripted:oracle")
        _eval(scripted_url, folder, "scripted:plan")
        _eval(scripted_url, folder, "scripted:runaway", max_turns=2)
        asyncio.run(run_eval(settings, echo=lambda _: None))

    with ThreadPoolExecutor(1) as pool:
        pool.submit(make).result()
    return folder


@pytest.fixture(scope="module")
def board(board_runs: Path) -> Path:
    return write_report([board_runs], board_runs.parent / "board.html")


@pytest.fixture
def board_page(browser: Any, board: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    page = browser.new_page()
    requests: list[str] = []
    complaints: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on(
        "console", lambda m: complaints.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: complaints.append(str(e)))
    page.goto(board.as_uri())
    yield page, requests, complaints
    page.close()


def _rows(tab: Any) -> list[dict[str, str]]:
    rows = tab.locator("#leaderboard tbody tr")
    return [
        {
            "label": rows.nth(i).locator("th").inner_text(),
            "rank": rows.nth(i).locator(".rank").inner_text(),
            **rows.nth(i).evaluate("row => Object.assign({}, row.dataset)"),
        }
        for i in range(rows.count())
    ]


@needs_browser
def test_the_leaderboard_opens_sorted_by_accuracy_and_sorts_by_a_clicked_column(
    board_page: tuple[Any, list[str], list[str]], board: Path
) -> None:
    tab, requests, complaints = board_page
    rows = _rows(tab)
    assert [r["rank"] for r in rows] == [str(i) for i in range(1, 5)]
    accuracies = [float(r["accuracy"]) for r in rows]
    assert accuracies == sorted(accuracies, reverse=True) and len(set(accuracies)) == 3
    # Two runs at 100 %: 9/9 has the higher lower bound than 6/6, so it leads.
    assert [r["label"] for r in rows[:2]] == ["gen", "scripted:oracle"]
    assert rows[-1]["label"] == "scripted:runaway"
    assert "gen-dev-s0-n9" in tab.locator("#leaderboard tbody tr").first.inner_text()
    tab.locator('#leaderboard th[data-sort="turn"]').click()
    turns = [float(r["turn"]) for r in _rows(tab)]
    assert turns == sorted(turns)
    assert tab.locator('#leaderboard th[data-sort="turn"]').get_attribute("aria-sort") == (
        "ascending"
    )
    tab.locator('#leaderboard th[data-sort="accuracy"]').click()
    assert [r["label"] for r in _rows(tab)] == [r["label"] for r in rows]
    assert complaints == []
    assert requests == [board.as_uri()]


@needs_browser
def test_each_interval_bar_is_drawn_to_scale(
    board_page: tuple[Any, list[str], list[str]], board_runs: Path
) -> None:
    tab, _, complaints = board_page
    runs = {run.label: run for run in load_runs([board_runs])}
    rows = tab.locator("#leaderboard tbody tr")
    assert rows.count() == len(runs)
    for i in range(rows.count()):
        row = rows.nth(i)
        run = runs[row.locator("th").inner_text()]
        ci = wilson(run.summary["correct"], run.summary["runs"])
        bar = row.locator(".ci").bounding_box()
        shaded = row.locator(".ci-range").bounding_box()
        tick = row.locator(".ci-point").bounding_box()
        assert shaded["x"] - bar["x"] == pytest.approx(ci.low * bar["width"], abs=1)
        assert shaded["width"] == pytest.approx((ci.high - ci.low) * bar["width"], abs=1)
        centre = tick["x"] + tick["width"] / 2 - bar["x"]
        assert centre == pytest.approx(ci.rate * bar["width"], abs=1.5)
        assert str(ci) in row.inner_text()
    assert complaints == []


@needs_browser
def test_accuracy_per_kind_and_a_generated_transcript(
    board_page: tuple[Any, list[str], list[str]], board: Path
) -> None:
    tab, requests, complaints = board_page
    kinds = tab.locator("#kinds tbody tr").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert set(generate.KINDS) <= set(kinds)
    assert {"timeout", "count", "notes", "read_all", "largest", "rotate"} <= set(kinds)
    heads = tab.locator("#kinds thead th").all_inner_texts()
    gen = heads.index("gen") - 1
    for kind in generate.KINDS:
        cell = tab.locator(f'#kinds tr[data-kind="{kind}"] td[data-run="{gen}"]')
        assert cell.inner_text().startswith("1/1 ")
    plan = heads.index("scripted:plan") - 1
    # files6's count, largest and read_all share a kind's name; smallest is generated only.
    assert tab.locator(f'#kinds tr[data-kind="smallest"] td[data-run="{plan}"]').inner_text() == "–"
    # A generated task's transcript shows its own workspace, not the three default files.
    tab.locator(f'#comparison tr[data-task="00-{_first_kind()}"] td[data-run="{gen}"] a').click()
    shown = tab.locator(".transcript:visible")
    assert shown.count() == 1
    listing = shown.locator(".result").first.inner_text()
    assert "errors.log" not in listing and "bytes" in listing
    # Unticking a run hides its leaderboard row and its column of kinds.
    tab.locator(f'.run-filter[value="{gen}"]').uncheck()
    assert tab.locator(f'#leaderboard tr[data-run="{gen}"]:visible').count() == 0
    assert tab.locator(f'#kinds [data-run="{gen}"]:visible').count() == 0
    assert tab.locator("#leaderboard tbody tr:visible").count() == 3
    assert complaints == []
    assert requests == [board.as_uri()]


def _first_kind() -> str:
    return str(generate.generate(0, len(generate.KINDS))["tasks"][0]["kind"])
