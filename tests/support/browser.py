"""Debian's Chromium, driven by Playwright, for the tests that look at the web UI."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium (`make chromium` installs it; Playwright's own download is not used)."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: run `make chromium`"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
