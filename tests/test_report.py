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

from evals.cli import main
from evals.errors import EvalError
from evals.record import files, kept_file, read_records, task_folder
from evals.report.compare import load_runs
from evals.report.view import render, write_report
from evals.run.runner import EvalSettings, run_eval
from evals.run.servers import Serving
from evals.run.settings import eval_loop
from evals.stats import wilson
from evals.workspace import generate
from lab.cli import main as lab_main
from lab.report.screenshot import CHROMIUM_FLAGS, HEIGHT, WIDTH
from serve_local.catalogue import DEFAULT_NAME

SMALL, TINY = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"
CHROMIUM = shutil.which("chromium")
# The machine has no network: Playwright cannot fetch its own browser, so it drives the system's.
needs_browser = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on this machine: make chromium installs it (root or sudo), or apt-get",
)
TIMINGS = {"prompt_n": 30, "cache_n": 60, "predicted_n": 10, "prompt_ms": 150.0}


def _eval(url: str, folder: Path, model: str, **extra: Any) -> Path:
    """An eval in a thread of its own: the module's browser (Playwright's sync API) keeps an
    event loop running in this one while it is open."""
    out = folder / f"{model.removeprefix('scripted:')}.jsonl"
    settings = EvalSettings(
        serving=Serving(base_url=url, model=model), out=out, label=model, **extra
    )
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run_eval(settings, echo=lambda _: None)).result()


def _as_model(run_file: Path, model: str | None, minute: int) -> Path:
    """The run's records as if ``model`` had answered (None: the model that did) at ``minute``
    past noon: scripted runs are kept out of the leaderboards and references unless asked for,
    and these stand for the ladder's runs. The times are set, not left to the clock: runs a
    second apart or less would tie on their timestamps, and "newest" would be decided by the
    order of the files."""
    stamp = f"2026-12-01T12:{minute:02d}:00+00:00"
    lines = [
        {**r, "spec": {**r["spec"], "model": model or r["spec"]["model"]}, "timestamp": stamp}
        for r in read_records(run_file)
    ]
    run_file.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run_file


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
    oracle = _eval(scripted_url, folder, "scripted:oracle")
    _add_timings(oracle)
    _as_model(oracle, DEFAULT_NAME, 0)
    _as_model(
        _eval(scripted_url, folder, "scripted:runaway", loop=eval_loop(max_turns=2)), SMALL, 1
    )
    _as_model(_eval(scripted_url, folder, "scripted:destructive"), TINY, 2)  # the newest
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
    monkeypatch.setattr(files, "COMPRESS_ABOVE", 0)
    run_file = _eval(scripted_url, tmp_path, "scripted:plan")
    record = read_records(run_file)[0]
    assert record["trace_path"].endswith(".trace.jsonl.gz")
    folder = task_folder(run_file)
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


# -- the first screen ------------------------------------------------------------------------


@needs_browser
def test_the_first_screen_sets_the_newest_run_against_the_references(
    page: tuple[Any, list[str], list[str]], report: Path
) -> None:
    tab, requests, complaints = page
    focus = tab.locator("#yours .focus")
    assert focus.count() == 1
    assert focus.locator("h2").inner_text().startswith("Your run: scripted:destructive")
    assert TINY in focus.locator(".facts").inner_text()
    rows = focus.locator("table.references tbody tr")
    roles = rows.locator("th").all_inner_texts()
    assert roles == ["default model, its best", "ladder model, its best"]
    assert DEFAULT_NAME in rows.nth(0).inner_text() and SMALL in rows.nth(1).inner_text()
    for i in range(rows.count()):
        verdict = rows.nth(i).locator(".verdict").inner_text()
        assert "exact test p = " in verdict or "not paired" in verdict
    # The oracle got all six right, the destructive run none: the exact test says so.
    assert "the reference is better by 100 points" in rows.nth(0).inner_text()
    assert "better-reference" in str(rows.nth(0).get_attribute("class"))
    # It is the first thing on the page: the references start within the first screen.
    tab.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    assert focus.locator("table.references").bounding_box()["y"] < HEIGHT
    assert complaints == []
    assert requests == [report.as_uri()]


def test_focus_names_the_run_the_report_opens_on(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oracle = runs / "oracle.jsonl"
    out = tmp_path / "focus.html"
    assert main(["view", str(runs), "--focus", str(oracle), "--out", str(out)]) == 0
    html = out.read_text()
    focus = html.split('<section id="yours">')[1].split("</section>")[0]
    assert "Your run: scripted:oracle" in focus and focus.count('class="focus"') == 1
    assert main(["view", str(runs), "--focus", str(tmp_path / "none.jsonl"), "--out", str(out)])
    assert "none.jsonl: no such run file" in capsys.readouterr().err


@needs_browser
def test_the_screenshot_is_the_first_screen(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    # In a thread of its own: the browser tests' driver may hold this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(lab_main, ["screenshot", str(report), "--out", str(png)]).result() == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (WIDTH, HEIGHT)


# -- each task set's leaderboard, plot, matrix and kinds -----------------------------------------


@pytest.fixture(scope="module")
def board_runs(scripted_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of different accuracy over files6 (one left scripted), and the oracle over a
    generated set, made last. Made in a thread of their own: the browser's driver may already
    hold this thread's event loop."""
    folder = tmp_path_factory.mktemp("board")
    generated = generate.write(0, len(generate.KINDS), folder.parent / "gen.json")
    settings = EvalSettings(
        serving=Serving(base_url=scripted_url, model="scripted:oracle"),
        tasks=generated,
        out=folder / "zz-generated.jsonl",
        label="gen",
    )

    def make() -> None:
        _as_model(_eval(scripted_url, folder, "scripted:oracle"), DEFAULT_NAME, 0)
        _as_model(_eval(scripted_url, folder, "scripted:plan"), SMALL, 1)
        _as_model(
            _eval(scripted_url, folder, "scripted:runaway", loop=eval_loop(max_turns=2)), TINY, 2
        )
        _as_model(_eval(scripted_url, folder, "scripted:destructive"), None, 3)
        _as_model(asyncio.run(run_eval(settings, echo=lambda _: None)), DEFAULT_NAME, 4)

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


FILES6 = "#set-files6"


def _rows(tab: Any, visible: bool = True) -> list[dict[str, str]]:
    rows = tab.locator(f"{FILES6} table.leaderboard tbody tr" + (":visible" if visible else ""))
    return [
        {
            "label": rows.nth(i).locator("td.label").inner_text(),
            "rank": rows.nth(i).locator(".rank").inner_text(),
            **rows.nth(i).evaluate("row => Object.assign({}, row.dataset)"),
        }
        for i in range(rows.count())
    ]


@needs_browser
def test_each_task_set_has_its_section_the_newest_runs_first(
    board_page: tuple[Any, list[str], list[str]],
) -> None:
    tab, _, complaints = board_page
    sets = tab.locator("section.task-set").evaluate_all(
        "sections => sections.map(s => s.dataset.taskSet)"
    )
    assert sets == ["gen-dev-s0-n9", "files6"]
    assert tab.locator("#yours .focus h2").inner_text().startswith("Your run: gen")
    # No other run asked the generated set's questions: nothing to set it against, said so.
    assert "No reference run on gen-dev-s0-n9" in tab.locator("#yours").inner_text()
    assert complaints == []


@needs_browser
def test_the_leaderboard_opens_sorted_by_accuracy_and_sorts_by_a_clicked_column(
    board_page: tuple[Any, list[str], list[str]], board: Path
) -> None:
    tab, requests, complaints = board_page
    rows = _rows(tab)
    # The scripted run is left out until asked for.
    assert len(rows) == 3 and [r["rank"] for r in rows] == ["1", "2", "3"]
    accuracies = [float(r["accuracy"]) for r in rows]
    assert accuracies == sorted(accuracies, reverse=True) and len(set(accuracies)) == 3
    assert rows[0]["label"] == "scripted:oracle" and rows[-1]["label"] == "scripted:runaway"
    tab.locator(f'{FILES6} th[data-sort="turn"]').click()
    turns = [float(r["turn"]) for r in _rows(tab)]
    assert turns == sorted(turns)
    assert tab.locator(f'{FILES6} th[data-sort="turn"]').get_attribute("aria-sort") == ("ascending")
    tab.locator(f'{FILES6} th[data-sort="accuracy"]').click()
    assert [r["label"] for r in _rows(tab)] == [r["label"] for r in rows]
    tab.locator("#show-aside").check()
    shown = _rows(tab)
    assert len(shown) == 4
    scripted = next(r for r in shown if r["label"] == "scripted:destructive")
    assert scripted["rank"] == "·"
    assert [r["rank"] for r in shown if r["rank"] != "·"] == ["1", "2", "3"]
    tab.locator("#show-aside").uncheck()
    assert len(_rows(tab)) == 3
    assert complaints == []
    assert requests == [board.as_uri()]


@needs_browser
def test_each_interval_bar_is_drawn_to_scale(
    board_page: tuple[Any, list[str], list[str]], board_runs: Path
) -> None:
    tab, _, complaints = board_page
    runs = {run.label: run for run in load_runs([board_runs])}
    rows = tab.locator("table.leaderboard tbody tr:visible")
    assert rows.count() == len(runs) - 1  # all but the scripted one
    for i in range(rows.count()):
        row = rows.nth(i)
        run = runs[row.locator("td.label").inner_text().splitlines()[0]]
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
def test_the_plot_draws_each_shown_configuration_and_the_front(
    board_page: tuple[Any, list[str], list[str]],
) -> None:
    tab, _, complaints = board_page
    dots = tab.locator(f"{FILES6} svg.scatter circle.dot")
    labels = dots.evaluate_all("dots => dots.map(d => d.dataset.label)")
    assert len(labels) == 3 and not any("destructive" in label for label in labels)
    # The oracle is the most accurate, so on the front whatever its latency.
    front = tab.locator(f"{FILES6} svg.scatter circle.on-front").evaluate_all(
        "dots => dots.map(d => d.dataset.label)"
    )
    assert any("scripted:oracle" in label for label in front)
    assert tab.locator(f"{FILES6} svg.scatter polyline.front").count() == 1
    # Turns per task: one histogram per matrix column, its bars counting every task once.
    for svg in tab.locator(f"{FILES6} svg.turns").all():
        counts = svg.locator("rect.count").evaluate_all("bars => bars.map(b => +b.dataset.tasks)")
        assert sum(counts) == 6
    assert complaints == []


@needs_browser
def test_the_matrix_marks_right_wrong_and_opens_transcripts(
    board_page: tuple[Any, list[str], list[str]],
) -> None:
    tab, _, complaints = board_page
    heads = tab.locator(f"{FILES6} table.matrix thead tr").first.locator("th").all_inner_texts()
    oracle = next(i for i, h in enumerate(heads) if h.startswith("scripted:oracle")) - 1
    runaway = next(i for i, h in enumerate(heads) if h.startswith("scripted:runaway")) - 1
    cells = tab.locator(f"{FILES6} table.matrix tbody tr")
    assert cells.count() == 6
    for i in range(6):
        row = cells.nth(i).locator("td")
        assert "pass" in str(row.nth(oracle).locator("a").get_attribute("class"))
        assert "fail" in str(row.nth(runaway).locator("a").get_attribute("class"))
    cells.nth(0).locator("td").nth(runaway).locator("a").click()
    shown = tab.locator(".transcript:visible")
    assert shown.count() == 1 and "scripted:runaway" in shown.locator("h2").inner_text()
    assert complaints == []


@needs_browser
def test_accuracy_per_kind_and_a_generated_transcript(
    board_page: tuple[Any, list[str], list[str]], board: Path
) -> None:
    tab, requests, complaints = board_page
    gen = "#set-gen-dev-s0-n9"
    kinds = tab.locator(f"{gen} table.kinds tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.kind)"
    )
    assert set(kinds) == set(generate.KINDS)
    for kind in generate.KINDS:
        cell = tab.locator(f'{gen} table.kinds tr[data-kind="{kind}"] td').first
        assert cell.inner_text().startswith("1/1 ")
    files6 = tab.locator(f"{FILES6} table.kinds tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.kind)"
    )
    assert set(files6) == {"timeout", "count", "notes", "read_all", "largest", "rotate"}
    # A generated task's transcript shows its own workspace, not the three default files.
    tab.locator(f'{gen} tr[data-task="00-{_first_kind()}"] td a').first.click()
    shown = tab.locator(".transcript:visible")
    assert shown.count() == 1
    listing = shown.locator(".result").first.inner_text()
    assert "errors.log" not in listing and "bytes" in listing
    assert complaints == []
    assert requests == [board.as_uri()]


def _first_kind() -> str:
    return str(generate.generate(0, len(generate.KINDS))["tasks"][0]["kind"])


def test_bfcl_runs_get_a_section_by_category(runs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bfcl"
    folder.mkdir()
    items = [
        {"model": SMALL, "id": f"s{i}", "category": "simple_python", "valid": i < 3}
        for i in range(4)
    ]
    items += [{"model": SMALL, "id": "i0", "category": "irrelevance", "valid": True}]
    # A request that failed is no answer: it counts in no rate, only under request errors.
    items += [{"model": SMALL, "id": "i1", "category": "irrelevance", "request_error": "HTTP 503"}]
    (folder / "run.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    out = tmp_path / "bfcl.html"
    assert main(["view", str(runs), "--bfcl", str(folder), "--out", str(out)]) == 0
    section = out.read_text().split('id="set-bfcl"')[1].split("</section>")[0]
    heads = section.split("<thead>")[1].split("</thead>")[0]
    # The call categories first, relevance apart after them.
    assert heads.index("simple_python") < heads.index("irrelevance")
    row = section.split('<th scope="row">run')[1].split("</tr>")[0]
    cells = row.split('<td class="num">')[1:]
    assert cells[0].startswith(str(wilson(3, 4).interval())) and "n=4" in cells[0]
    assert cells[1].startswith(str(wilson(1, 1).interval())) and "n=1" in cells[1]
    assert cells[2].startswith("1")
    assert "published: Qwen2.5-1.5B-Instruct (FC)" in section
    assert main(["view", str(runs), "--bfcl", str(tmp_path / "none"), "--out", str(out)]) == 1


def test_a_corrupt_state_file_is_named_and_the_report_still_written(
    scripted_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _eval(scripted_url, tmp_path / "runs", "scripted:oracle")
    first, second = read_records(run)[:2]
    broken = kept_file(run, f"{first['run_id']}.json")
    assert broken is not None
    broken.write_text('{"run_id": "cut sho')
    wrong = kept_file(run, f"{second['run_id']}.json")
    assert wrong is not None
    wrong.write_text("[1, 2]")
    out = tmp_path / "report.html"
    assert main(["view", str(tmp_path / "runs"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{broken}: not a readable run state" in err and f"{wrong}: not a readable" in err
    html = out.read_text()
    assert first["task_id"] in html and second["task_id"] in html


def test_a_corrupt_run_file_is_named_left_out_and_the_report_still_written(
    scripted_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "runs"
    good = _eval(scripted_url, folder, "scripted:oracle")
    bad = folder / "cut.jsonl"
    bad.write_text(good.read_text().splitlines()[0] + "\n" + '{"task_id": "cut sho\n')
    out = tmp_path / "report.html"
    assert main(["view", str(folder), "--out", str(out)]) == 0
    assert f"{bad}, line 2: not a JSON record" in capsys.readouterr().err
    assert "scripted:oracle" in out.read_text()
    # Where one run is all there is to read, an unreadable one is still an error.
    with pytest.raises(EvalError, match=r"cut\.jsonl, line 2"):
        load_runs([bad])


def test_the_pass_k_figure_draws_one_line_per_run_tried_more_than_once() -> None:
    from evals.report.svg import pass_curves

    figure = str(pass_curves([("a", [0.8, 0.6, 0.5, 0.45]), ("b", [0.4]), ("c", [0.5, 0.2])], "t"))
    assert figure.count("<polyline") == 2  # b ran once: a point says nothing of reliability
    assert "pass^4 45 %" in figure and "pass^2 20 %" in figure
    assert str(pass_curves([("b", [0.4])], "t")) == ""
