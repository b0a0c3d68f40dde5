"""The demo report in headless Chromium: no console errors, dialogs or network requests."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_demo_report_opens_cleanly(open_page, demo_report):
    """Opening the demo report logs no errors, opens no dialogs and requests nothing beyond the file."""
    _, page, events = open_page(demo_report.as_uri())
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}
    assert page.locator("section").count() >= 12
    editor = page.locator(".xai-whatif-offline")
    assert editor.count() == 1 and editor.get_attribute("data-xai-ready") == "1"
