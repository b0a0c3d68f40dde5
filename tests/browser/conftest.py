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
    (aborted). Every context it opened is closed when the test ends, passed or failed.
    """
    opened = []

    def open_(url: str, *, javascript: bool = True):
        context = browser.new_context(
            java_script_enabled=javascript, viewport={"width": 1000, "height": 900}
        )
        opened.append(context)
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

    yield open_
    for context in opened:
        context.close()


#: WCAG contrast of every visible text against what is behind it (the lowest five).
CONTRAST_JS = """root => {
  const parse = s => { const m = s.match(/rgba?\\(([^)]+)\\)/);
    if (m) { const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    const c = s.match(/color\\(srgb ([^)]+)\\)/); if (!c) return null;  // what color-mix() computes to
    const [rgb, alpha] = c[1].split('/'); const p = rgb.trim().split(/\\s+/).map(v => 255 * Number(v));
    return [p[0], p[1], p[2], alpha === undefined ? 1 : Number(alpha)]; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const background = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let out = [255, 255, 255];
    for (const c of layers.reverse()) out = out.map((v, i) => v * (1 - c[3]) + c[i] * c[3]);
    return out; };
  const worst = [];
  for (const el of root.querySelectorAll('*')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const bg = background(el); const fg = parse(getComputedStyle(el).color);
    const c = fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
    const [a, b] = [lum(c), lum(bg)].sort((x, y) => y - x);
    worst.push([(a + 0.05) / (b + 0.05), el.tagName, el.textContent.trim().slice(0, 40)]);
  }
  return worst.sort((x, y) => x[0] - y[0]).slice(0, 5);
}"""


@pytest.fixture
def lowest_contrast():
    """``lowest_contrast(page)``: the five lowest ``[ratio, tag, text]`` of the page's visible texts."""
    return lambda page: page.eval_on_selector("body", CONTRAST_JS)
