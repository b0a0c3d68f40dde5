"""MaxPool2D's channels-last kernel against torch's max_pool2d and its autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.kernels.pool import max_pool2d, max_pool2d_vjp

CASES = [  # (pool, stride, padding, ceil_mode, height, width)
    (3, 2, 1, False, 11, 9),  # a ResNet stem's pool, overlapping windows
    (2, 2, 0, False, 8, 8),
    (2, 2, 0, True, 7, 9),  # ceil_mode: the last window runs past the input
    (3, 1, 1, False, 5, 6),
    (3, 2, 0, True, 12, 10),
]


def torch_pool(x: np.ndarray, g: np.ndarray, pool, stride, padding, ceil_mode):
    """torch's output and input gradient (seeded with ``g``)."""
    xt = torch.from_numpy(x).requires_grad_()
    y = torch.nn.functional.max_pool2d(xt, pool, stride, padding, ceil_mode=ceil_mode)
    y.backward(torch.from_numpy(g))
    return y.detach().numpy(), xt.grad.numpy()


def pool_layer(pool, stride, padding, ceil_mode, shape, layout="NCHW"):
    layer = nn.MaxPool2D(pool, stride=stride, padding=padding, ceil_mode=ceil_mode, layout=layout)
    nn.Sequential([layer], input_shape=shape)  # builds it
    return layer


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}s{c[1]}p{c[2]}{'c' if c[3] else ''}")
def test_max_pool_equals_torch_forward_and_backward(case, dtype):
    """Random values and many ties (a ReLU's zeros and repeated values): torch's first maximum."""
    pool, stride, padding, ceil_mode, h, w = case
    rng = np.random.default_rng(0)
    x = np.maximum(rng.integers(-3, 4, size=(3, 5, h, w)), 0).astype(dtype)  # ties everywhere
    x[0] = rng.normal(size=x[0].shape)
    layer = pool_layer(pool, stride, padding, ceil_mode, x.shape[1:])
    backend = xai.get_backend("cpu", dtype=dtype)
    record: dict = {}
    y = layer.apply(x, backend, record)
    g = rng.normal(size=y.shape).astype(dtype)
    ty, tgx = torch_pool(x, g, pool, stride, padding, ceil_mode)
    np.testing.assert_array_equal(y, ty)
    gx, _ = layer.vjp(g, backend, record)
    np.testing.assert_allclose(gx, tgx, rtol=0, atol=1e-12 if dtype == "float64" else 1e-6)


def test_channels_last_memory_and_nhwc_layout_give_the_same():
    """An NCHW-shaped view of channels-last memory (a convolution's output), and an NHWC layer."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 4, 9, 9))
    g = rng.normal(size=(2, 4, 5, 5))
    ty, tgx = torch_pool(x, g, 3, 2, 1, False)
    backend = xai.get_backend("cpu", dtype="float64")
    view = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    layer = pool_layer(3, 2, 1, False, x.shape[1:])
    record: dict = {}
    np.testing.assert_array_equal(layer.apply(view, backend, record), ty)
    np.testing.assert_allclose(layer.vjp(g, backend, record)[0], tgx, atol=1e-12)
    nhwc = pool_layer(3, 2, 1, False, (9, 9, 4), layout="NHWC")
    record = {}
    y = nhwc.apply(x.transpose(0, 2, 3, 1), backend, record)
    np.testing.assert_array_equal(y, ty.transpose(0, 2, 3, 1))
    gx = nhwc.vjp(np.ascontiguousarray(g.transpose(0, 2, 3, 1)), backend, record)[0]
    np.testing.assert_allclose(gx, tgx.transpose(0, 2, 3, 1), atol=1e-12)


def test_a_window_holding_nan_has_a_nan_maximum():
    """As np.maximum (and torch) propagate NaN, wherever in the window it is."""
    x = np.arange(2 * 1 * 4 * 4, dtype=np.float64).reshape(2, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan  # first cell of the first window
    x[1, 0, 1, 1] = np.nan  # last cell of the first window
    y, tap = max_pool2d(x, (2, 2), (2, 2), (0, 0, 0, 0), (2, 2))
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[1, 0, 0, 0])
    assert tap[0, 0, 0, 0] == 0 and tap[1, 0, 0, 0] == 3  # the gradient goes to the NaN, as torch's
    assert np.isfinite(y[:, :, 1]).all() and np.isfinite(y[:, :, :, 1]).all()


def test_the_kernel_taps_point_at_the_first_maximum_in_row_major_order():
    """Every window equal: the gradient goes to each window's first (top-left) cell."""
    x = np.ones((1, 1, 4, 4))
    y, tap = max_pool2d(x, (2, 2), (2, 2), (0, 0, 0, 0), (2, 2))
    assert (tap == 0).all()
    gx = max_pool2d_vjp(np.ones_like(y), tap, x.shape, (2, 2), (2, 2), (0, 0, 0, 0))
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1
    np.testing.assert_array_equal(gx[0, 0], expected)
