"""A spread of timm CNN families through the zoo's stages: import, forward vs torch, IG, and on a
subset tpu, edgetpu after xai.quantize, and the .tflite file in LiteRT."""

from __future__ import annotations

import pytest

from xai_core.importers.zoo import catalogue

from .conftest import check_stages, params

#: The models that run every stage (tpu, edgetpu, tflite too).
FULL = {"efficientnet_lite0", "mobilenetv2_050", "regnetx_002", "resnet10t", "vit_tiny_patch16_224"}

#: Stages still refused or failing: model -> {stage: (status, words of the detail)}.
#: The test fails when one starts passing or fails otherwise.
EXPECTED: dict[str, dict[str, tuple[str, str]]] = {}


@pytest.mark.parametrize(("entry", "stages"), params(catalogue("timm"), FULL))
def test_timm_model(entry, stages):
    """Each stage passes (forward within 1e-4 of torch), or is the refusal listed in EXPECTED."""
    check_stages(entry, stages, EXPECTED.get(entry.name, {}))
