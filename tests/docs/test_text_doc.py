"""docs/text.md: its example runs and shows what its comments say."""

import re
from pathlib import Path

DOC = (Path(__file__).parents[2] / "docs" / "text.md").read_text()


def test_text_example_runs_as_documented():
    """The example's tokens, shapes and merged words are those in its comments."""
    block, across = re.findall(r"```python\n(.*?)```", DOC, re.S)
    scope: dict = {}
    exec(compile(block, "docs/text.md", "exec"), scope)
    e, words = scope["e"], scope["words"]
    assert list(e.meta["tokens"][1]) == ["[CLS]", "a", "dog", "play", "##ing", "[SEP]", "", ""]
    assert e.values.shape == (2, 8)
    assert list(words.meta["tokens"][1][:5]) == ["[CLS]", "a", "dog", "playing", "[SEP]"]
    assert "xai-text" in scope["html"]


def test_across_hardware_example_runs_as_documented():
    """The compare_backends example, continuing the first: backends, tokens, the page."""
    block, across = re.findall(r"```python\n(.*?)```", DOC, re.S)
    scope: dict = {}
    exec(compile(block + across, "docs/text.md", "exec"), scope)
    c = scope["c"]
    assert list(c.explanations) == ["cpu", "tpu", "gpu"]
    assert list(c.explanations["tpu"].meta["tokens"][1][:3]) == ["[CLS]", "a", "dog"]
    assert set(scope["shifts"]["backend"]) == {"tpu", "gpu"}
    assert "tpu \u2212 cpu" in scope["page"]
