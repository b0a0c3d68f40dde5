"""docs/text.md: its example runs and shows what its comments say."""

import re
from pathlib import Path

import numpy as np
import pytest

DOC = (Path(__file__).parents[2] / "docs" / "text.md").read_text()


def test_text_example_runs_as_documented():
    """The example's tokens, shapes and merged words are those in its comments."""
    block = re.findall(r"```python\n(.*?)```", DOC, re.S)[0]
    scope: dict = {}
    exec(compile(block, "docs/text.md", "exec"), scope)
    e, words = scope["e"], scope["words"]
    assert list(e.meta["tokens"][1]) == ["[CLS]", "a", "dog", "play", "##ing", "[SEP]", "", ""]
    assert e.values.shape == (2, 8)
    assert list(words.meta["tokens"][1][:5]) == ["[CLS]", "a", "dog", "playing", "[SEP]"]
    assert "xai-text" in scope["html"]


def test_across_hardware_example_runs_as_documented():
    """The compare_backends example, continuing the first: backends, tokens, the page."""
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.S)
    block, across = blocks[0], blocks[2]
    scope: dict = {}
    exec(compile(block + across, "docs/text.md", "exec"), scope)
    c = scope["c"]
    assert list(c.explanations) == ["cpu", "tpu", "gpu"]
    assert list(c.explanations["tpu"].meta["tokens"][1][:3]) == ["[CLS]", "a", "dog"]
    assert set(scope["shifts"]["backend"]) == {"tpu", "gpu"}
    assert "tpu \u2212 cpu" in scope["page"]


@pytest.mark.slow  # shap compiles its numba helpers on its first call
def test_perturbation_example_runs_as_documented():
    """LIME on a string model per word, SHAP on the network per token, as the comments say."""
    first, second = re.findall(r"```python\n(.*?)```", DOC, re.S)[:2]
    scope: dict = {}
    exec(compile(first + second, "docs/text.md", "exec"), scope)
    lime_e, shap_e = scope["lime_e"], scope["shap_e"]
    assert lime_e.meta["features"][1] == ["a", "dog", "playing"]
    assert lime_e.meta["merge"] == "words"
    assert shap_e.values.shape == (2, 8)
    np.testing.assert_allclose(
        shap_e.base_values + shap_e.values.sum(1), shap_e.meta["output"], atol=1e-5
    )
