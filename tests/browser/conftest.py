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
