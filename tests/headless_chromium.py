"""Debian's Chromium, headless, driven by Playwright's sync API: the page tests' browser (the question
page, tests/test_web_page.py; LangServe's playground, tests/langserve_app/). The tests never download
a browser: without playwright or chromium the module that asks skips, saying why."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"]


def playwright_and_chromium(install: str) -> tuple[Any, str]:
    """(playwright's sync API, chromium's path); a module-level skip naming what is missing (`install`:
    how to install playwright in the caller's environment)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason=f"playwright is not installed: {install}")
    chromium = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")
    if not chromium:
        pytest.skip("no chromium: install Debian's chromium (apt-get install chromium); the tests never download one",
                    allow_module_level=True)
    return sync_api, chromium


@contextmanager
def launched(sync_api: Any, chromium: str) -> Iterator[Any]:
    """A headless browser, closed at the end."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            yield browser
        finally:
            browser.close()
