"""docs/reports.md stays true: its third-party section example runs and keeps the contract."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")


def test_third_party_section_example_keeps_the_contract():
    """The toolkit example renders an escaped, self-contained section that passes its check."""
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.S)
    (section,) = [b for b in blocks if "class Saliency" in b]
    (check,) = [b for b in blocks if "check_report_section(SECTION" in b]
    scope: dict = {}
    exec(compile(section + check, "docs/reports.md", "exec"), scope)
    scope["test_saliency_section"]()
    html = scope["render_saliency"](scope["Saliency"]("<b>x</b>", scope["np"].eye(8)))
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert 'src="data:image/png;base64,' in html


def test_links_point_at_files():
    """Every relative link of the reports and images pages names a file."""
    for page in ("reports.md", "images.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        links = [
            link for link in re.findall(r"\]\(([^)#]+)\)", text) if not link.startswith("http")
        ]
        assert all((ROOT / "docs" / link).exists() for link in links), page
