"""``python -m evals view``: the HTML report, read as a person reads it, in a real browser."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals import records
from evals.records import kept_file, read_records
from evals.runner import EvalSettings, run_eval
from evals.view import render, write_report

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
    reason="no chromium on this machine: apt-get install -y chromium (.ci/run installs it)",
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
