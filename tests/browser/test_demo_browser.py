"""The demo report in headless Chromium: no console errors, dialogs or network requests."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_demo_report_opens_cleanly(browser, demo_report):
    """Opening the demo report logs no errors, opens no dialogs and requests nothing beyond the file."""
    page = browser.new_page()
    problems = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: (
            problems.append(f"request: {r.url}")
            if not r.url.startswith(("file:", "data:"))
            else None
        ),
    )
    page.goto(demo_report.as_uri())
    page.wait_for_load_state("load")
    assert problems == []
    assert page.locator("section").count() >= 12
    page.close()
