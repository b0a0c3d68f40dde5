"""The 9 "light" model-zoo networks of the ONNX backend test suite import and give its outputs.

They ship inside the onnx wheel (``onnx/backend/test/data/light``) with their expected
output; the input is the suite's own deterministic one (``arange(n) / n`` in the input's
shape), as its runner builds it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS, ids=MODELS)
def test_light_model_equals_its_expected_output(name: str) -> None:
    """from_onnx imports the network and its output equals the suite's, within 1e-5 relative."""
    path = LIGHT / f"light_{name}.onnx"
    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    x = next(i for i in model.graph.input if i.name not in inits)
    shape = [d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    X = (np.arange(n).reshape(shape) / n).astype(np.float32)
    want = numpy_helper.to_array(onnx.load_tensor(str(path)[: -len(".onnx")] + "_output_0.pb"))
    got = xai.from_onnx(path).predict(X).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
