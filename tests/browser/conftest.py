"""Headless Chromium for browser tests: Debian's package driven by Playwright, never a downloaded browser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing(reason: str) -> None:
    """Skip on a developer's machine; fail where XAI_REQUIRE_BROWSER is set (CI)."""
    if os.environ.get("XAI_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests are required here but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    """A launched Chromium, or a skip (a failure in CI) saying what is missing."""
    try:
        from playwright import sync_api
    except ImportError:
        _missing("playwright is not installed: pip install 'xai-core[browser]'")
    if not CHROMIUM.is_file():
        _missing(f"{CHROMIUM} not found: apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def open_page(browser):
    """``open_page(url, javascript=True)``: a new context and page at ``url`` that records what must not happen.

    Returns ``(context, page, events)``; ``events`` collects console errors and warnings,
    page errors, dialogs (dismissed) and every request that is not ``file:`` or ``data:``
    (aborted). Close the context when done.
    """

    def open_(url: str, *, javascript: bool = True):
        context = browser.new_context(
            java_script_enabled=javascript, viewport={"width": 1000, "height": 900}
        )
        events = {"console": [], "dialogs": [], "network": [], "page_errors": []}

        def route(r):
            if r.request.url.startswith(("file:", "data:")):
                r.continue_()
            else:
                events["network"].append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on(
            "console", lambda m: m.type in ("error", "warning") and events["console"].append(m.text)
        )
        page.on("pageerror", lambda e: events["page_errors"].append(str(e)))
        page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
        page.goto(url, wait_until="load")
        page.wait_for_timeout(200)
        return context, page, events

    return open_
