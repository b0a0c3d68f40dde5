"""The zoo tests' one check: each stage asked for passes, or is the expected refusal."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pytest

from xai_core.importers.zoo import ZooModel
from xai_core.importers.zoo.checks import NEEDS, check_model

#: The zoo's large models (VGG, ViT-L, EfficientNet-B7, RegNet-Y 32GF...) take minutes each on
#: two cores, past the test suite's budget: they run with ``XAI_ZOO_ALL=1``, and every model,
#: large or not, through ``python -m xai_core.importers.zoo`` (docs/zoo.md has its table).
#: Their skip is reported with this reason, never silent.
LARGE = pytest.mark.skipif(
    not os.environ.get("XAI_ZOO_ALL"),
    reason="a large zoo model: XAI_ZOO_ALL=1 runs it (or python -m xai_core.importers.zoo)",
)

#: What every model runs; the full list (tpu, edgetpu, tflite) runs on a subset.
QUICK = ("import", "forward", "ig")


def params(entries: Sequence[ZooModel], full: set[str]) -> list:
    """One pytest param per entry: (entry, its stages), marked slow when the entry is."""
    out = []
    for e in entries:
        stages = (*QUICK, "tpu", "edgetpu", "tflite") if e.name in full else QUICK
        marks = [pytest.mark.slow, LARGE] if e.slow else []
        out.append(pytest.param(e, stages, id=e.name, marks=marks))
    return out


def check_stages(
    entry: ZooModel, stages: Sequence[str], expected: Mapping[str, tuple[str, str]]
) -> None:
    """Run ``stages`` on ``entry``; each must pass, or be ``expected[stage]`` = (status,
    words in its detail); a stage after one expected not to pass must be skipped."""
    result = check_model(entry, stages=stages, steps=2)
    for stage in stages:
        got = result.stages[stage]
        if stage in expected:
            status, words = expected[stage]
        elif any(n in expected for n in NEEDS[stage]):
            status, words = "skipped", "needs"
        else:
            status, words = "pass", ""
        assert (got.status, words in got.detail) == (status, True), (
            f"{entry.key} {stage}: expected {status} ({words!r}); got {got.status}: {got.detail}"
        )
