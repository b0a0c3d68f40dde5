"""xai.quantize on torchvision's regnet_x_400mf and densenet121 at 64 px: LiteRT's integers, torch's outputs, the Edge TPU.

torchvision comes with the ``zoo`` extra, which CI installs: there (env ``CI`` set) a missing
torchvision fails the test instead of skipping it. The weights are torchvision's random
initialisation with trained-looking batch-norm statistics (no download).
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import xai_core as xai
from xai_core.testing import litert_reference_outputs

torch = pytest.importorskip("torch")
litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)


def _torchvision():
    if os.environ.get("CI"):
        return importlib.import_module("torchvision")  # CI installs the zoo extra: never skip
    return pytest.importorskip("torchvision", reason="the zoo extra is not installed")


#: Largest |int8 - float| over the float logits' peak |value| (measured on these inputs:
#: 2.0% for regnet_x_400mf and 3.0% for densenet121, with the same top class on every row).
TOLERANCE = 0.08


@pytest.mark.slow
@pytest.mark.parametrize("name", ["regnet_x_400mf", "densenet121"])
def test_torchvision_model_quantises_runs_in_litert_and_on_the_edge_tpu(name, tmp_path):
    """Quantised, written and run by LiteRT's reference kernels: same integers, logits near torch's, edgetpu placed."""
    tv = _torchvision()
    torch.manual_seed(0)
    module = getattr(tv.models, name)(weights=None, num_classes=10).eval()
    g = torch.Generator().manual_seed(1)
    for bn in module.modules():
        if isinstance(bn, torch.nn.BatchNorm2d):
            c = bn.num_features
            bn.running_mean.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
            bn.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            bn.weight.data.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            bn.bias.data.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
    X = np.random.default_rng(2).uniform(0, 1, (20, 3, 64, 64)).astype(np.float32)
    net = xai.from_torch(module, torch.from_numpy(X[:1]))
    q = xai.quantize(net, X[:16], progress=False)
    test = X[16:]
    with torch.no_grad():
        expected = module(torch.from_numpy(test)).numpy()

    Q = q.quantize_input(test)
    ours = q.run(Q)[q.graph.outputs[0]].reshape(len(test), -1)
    path = xai.to_tflite(q, tmp_path / f"{name}.tflite")
    np.testing.assert_array_equal(ours, litert_reference_outputs(path, Q).reshape(ours.shape))
    out = q.graph.tensors[q.graph.outputs[0]]
    logits = np.float64(out.scale[0]) * (ours.astype(np.float64) - int(out.zero_point[0]))
    error = np.abs(logits - expected).max() / np.abs(expected).max()
    assert error < TOLERANCE, f"{name}: int8 logits differ by {error:.1%} of the peak logit"
    assert (logits.argmax(axis=1) == expected.argmax(axis=1)).all()

    runner = xai.ModelRunner(q, backend="edgetpu")
    np.testing.assert_allclose(runner.predict(test[:1]), logits[:1], rtol=0, atol=1e-6)
    placement = q.placement()
    on_host = sum(p.device == "host" for p in placement)
    assert runner.counters["host_operators"] == on_host
    assert runner.counters["edgetpu_operators"] == len(placement) - on_host
    ops = q.operators
    if name == "densenet121":  # every batch norm after a concatenation: MUL + ADD, all mapped
        assert ops.count("MUL") == ops.count("ADD") == 58 + 3 + 1  # layers, transitions, norm5
        assert on_host == 0 and "PADV2" not in ops  # the stem's max pool pads ReLU output: PAD
    else:  # the first grouped CONV_2D ends the Edge TPU's part
        first = next(p for p in placement if p.device == "host")
        assert first.op == "CONV_2D" and "grouped" in first.reason
