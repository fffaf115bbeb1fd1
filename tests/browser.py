"""Headless Chromium for the tests that open a page the project writes (report.html, the
documentation site): the distribution's Chromium driven by Playwright, offline."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def browser_or_skip() -> None:
    """Skip (with the reason) when Chromium or Playwright is missing; fail instead on CI,
    where the slow step must run the browser tests."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append('Playwright (pip install -e ".[test]")')
    if not CHROMIUM.is_file():
        missing.append(f"Chromium at {CHROMIUM} (apt-get install chromium)")
    if os.environ.get("MARKETSIM_NO_BROWSER"):  # .ci/run tried to install it and could not
        pytest.skip(f"no browser: {os.environ['MARKETSIM_NO_BROWSER']}")
    if missing:
        reason = "the browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set: .ci/run installs them)")
        pytest.skip(reason)


@contextmanager
def offline_page() -> Iterator[tuple[Any, list[str]]]:
    """A 1280x900 page of headless Chromium that loads ``file://`` URLs only, and the list
    of every other URL it attempted (each aborted): a page that works offline leaves it empty.
    Call :func:`browser_or_skip` first."""
    from playwright.sync_api import sync_playwright  # the test extra; checked by the caller

    attempted: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def route(r: Any) -> None:
                if r.request.url.startswith("file://"):
                    r.continue_()
                else:
                    attempted.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            yield page, attempted
        finally:
            browser.close()
