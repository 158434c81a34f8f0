"""The report's first screen as a PNG (``python -m lab screenshot``): what a user sees on
opening it, drawn by the system's chromium through Playwright (which never downloads a
browser here)."""

from __future__ import annotations

import shutil
from pathlib import Path

from evals.errors import EvalError

# What the browser tests launch with: headless, and nothing reaching out to the network.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WIDTH, HEIGHT = 1280, 900


class ScreenshotError(EvalError):
    """No browser to draw the page with, or no page to draw."""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ScreenshotError(
            "no chromium on this machine: make chromium installs Debian's (root or sudo)"
        )
    return found


def screenshot(page: Path, out: Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """The first ``width`` × ``height`` pixels of ``page``, opened from file://."""
    if not page.is_file():
        raise ScreenshotError(f"{page}: no such report (python -m evals view writes one)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # the dev extra installs it
        raise ScreenshotError("playwright is not installed: make setup installs it") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.goto(page.resolve().as_uri())
            tab.screenshot(path=str(out))
        finally:
            browser.close()
    return out
