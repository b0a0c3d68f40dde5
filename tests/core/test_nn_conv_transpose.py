"""Conv2DTranspose against torch.nn.functional.conv_transpose2d: values and every gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.errors import ShapeError, ValidationError

CASES = [
    # in_channels, filters, kernel, stride, (top, bottom, left, right), output_padding, dilation, groups
    (3, 4, 3, 1, (0, 0, 0, 0), 0, 1, 1),
    (4, 6, 3, 2, (1, 1, 1, 1), 1, 1, 2),
    (2, 3, (2, 3), (2, 1), (0, 0, 1, 1), (1, 0), 1, 1),
    (2, 2, 3, 2, (1, 1, 0, 0), 0, 2, 1),
    (6, 6, 4, 2, (1, 1, 1, 1), 0, 1, 6),  # depthwise upsampling
]


def _torch(x, w, b, stride, pads, output_padding, dilation, groups):
    """torch pads symmetrically: crop asymmetric pads from the unpadded result."""
    y = torch.nn.functional.conv_transpose2d(
        x, w, b, stride=stride, output_padding=output_padding, dilation=dilation, groups=groups
    )
    t, bottom, left, right = pads
    return y[:, :, t : y.shape[2] - bottom, left : y.shape[3] - right]


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_equal_torch(case):
    c, f, kernel, stride, pads, out_pad, dilation, groups = case
    rng = np.random.default_rng(0)
    g = nn.Graph((c, 5, 4), dtype="float64")
    layer = nn.Conv2DTranspose(
        f, kernel, stride, pads, output_padding=out_pad, dilation=dilation, groups=groups
    )
    g.add(layer, "input", name="up")
    w = rng.standard_normal(layer.weight.shape)
    bias = rng.standard_normal(f)
    g.set_params("up", weight=w, bias=bias)
    X = rng.standard_normal((2, c, 5, 4))

    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    xt = torch.tensor(X, requires_grad=True)
    wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(bias, requires_grad=True)
    yt = _torch(xt, wt, bt, pair(stride), pads, pair(out_pad), pair(dilation), groups)
    cpu = xai.get_backend("cpu", dtype="float64")
    record = nn.executor.Record()
    y = g.forward(X, cpu, record=record)
    assert y.shape == tuple(yt.shape) == (2, *g.shape_of("up"))
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)

    seed = rng.standard_normal(y.shape)
    (yt * torch.tensor(seed)).sum().backward()
    gX, grads = g.vjp(seed, cpu, record)
    np.testing.assert_allclose(gX, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["up"]["weight"], wt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["up"]["bias"], bt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_channels_last_equals_channels_first():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    nets = []
    for layout, shape in (("NCHW", (3, 4, 4)), ("NHWC", (4, 4, 3))):
        g = nn.Graph(shape, layout=layout)
        g.add(nn.Conv2DTranspose(5, 3, 2, 1, output_padding=1, layout=layout), name="up")
        nets.append(g)
    nets[1].set_params("up", **nets[0].node("up").layer.params)
    a = nets[0].predict(X).reshape(2, 5, 8, 8)
    b = nets[1].predict(X.transpose(0, 2, 3, 1)).reshape(2, 8, 8, 5).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_the_tpu_counts_its_products_as_matmuls():
    g = nn.Graph((4, 6, 6))
    g.add(nn.Conv2DTranspose(8, 3, 2, 1, output_padding=1), name="up")
    tpu = xai.get_backend("tpu")
    X = np.random.default_rng(2).standard_normal((2, 4, 6, 6)).astype(np.float32)
    cpu_out = g.predict(X)
    tpu_out = g.predict(X, tpu)
    np.testing.assert_allclose(tpu_out, cpu_out, rtol=2e-2, atol=2e-2)  # bf16 products
    assert tpu.counters["matmuls"] == 1 and tpu.counters["macs"] == 2 * g.macs_per_sample


def test_saved_and_loaded(tmp_path):
    g = nn.Graph((2, 3, 3))
    g.add(nn.Conv2DTranspose(3, 2, 2, output_padding=1, use_bias=False), name="up")
    g.save(tmp_path / "up.npz")
    back = nn.load_model(tmp_path / "up.npz")
    X = np.random.default_rng(3).standard_normal((1, 2, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(back.predict(X), g.predict(X))


def test_bad_arguments_are_refused():
    with pytest.raises(ValidationError, match="output_padding must be less than the stride"):
        nn.Conv2DTranspose(4, 3, stride=2, output_padding=2)
    with pytest.raises(ValidationError, match="multiple of groups"):
        nn.Conv2DTranspose(5, 3, groups=2)
    g = nn.Graph((3, 4, 4))
    with pytest.raises(ShapeError, match="groups"):
        g.add(nn.Conv2DTranspose(4, 3, groups=2))
    with pytest.raises(ShapeError, match="leaves an output"):
        g.add(nn.Conv2DTranspose(4, 1, padding=3))
