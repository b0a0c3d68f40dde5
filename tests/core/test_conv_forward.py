"""The cpu backend's forward-only (channels-last) convolutions equal the im2col path and torch."""

from __future__ import annotations

import numpy as np
import pytest

from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.kernels.conv_forward import forward_kind
from xai_core.kernels.conv_ops import ConvGeometry

# (channels, filters, kernel, strides, pads, dilation, groups, height, width, expected kernel)
CASES = {
    "depthwise-3x3-same": (6, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6, 9, 8, "depthwise"),
    "depthwise-strided-even": (5, 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5, 10, 8, "depthwise"),
    "depthwise-strided-odd": (5, 5, (3, 3), (2, 2), (0, 1, 0, 1), (1, 1), 5, 9, 7, "depthwise"),
    "depthwise-valid": (4, 4, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 4, 9, 8, "depthwise"),
    "depthwise-dilated-asymmetric": (
        4,
        4,
        (3, 2),
        (1, 1),
        (2, 0, 1, 3),
        (2, 1),
        4,
        9,
        8,
        "depthwise",
    ),
    "depthwise-5x3-mixed": (3, 3, (5, 3), (2, 1), (1, 2, 0, 1), (1, 2), 3, 9, 8, "depthwise"),
    "depthwise-stride-3-wide-pads": (
        3,
        3,
        (2, 3),
        (3, 2),
        (4, 4, 3, 0),
        (3, 2),
        3,
        7,
        9,
        "depthwise",
    ),
    "depthwise-3x3-dilated-asymmetric": (
        4,
        4,
        (3, 3),
        (2, 1),
        (2, 0, 1, 3),
        (2, 2),
        4,
        9,
        8,
        "depthwise",
    ),
    "depthwise-3x3-windows-in-padding": (
        3,
        3,
        (3, 3),
        (3, 2),
        (4, 4, 3, 0),
        (3, 2),
        3,
        7,
        9,
        "depthwise",
    ),
    "depthwise-1x1": (4, 4, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4, 5, 6, "depthwise"),
    "pointwise": (6, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, 9, 8, "pointwise"),
    "depthwise-multiplier": (4, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, 9, 8, None),
    "pointwise-strided": (6, 4, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, 9, 8, None),
    "columns-3x3": (3, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 9, 8, "columns"),
    "columns-strided-dilated": (1, 4, (3, 2), (2, 3), (2, 0, 1, 3), (2, 1), 1, 9, 8, "columns"),
    "taps": (5, 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 9, 8, None),
}


def _case(name, dtype, n=3, seed=0):
    c, f, k, s, p, d, g, h, w, _ = CASES[name]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = rng.standard_normal((f, c // g, *k)).astype(dtype)
    b = rng.standard_normal(f).astype(dtype)
    return x, wt, b, ConvGeometry(k, s, p, d, g)


def _orders(x):
    """``x`` in NCHW, channels-last and channel-major memory (the same values)."""
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    major = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    return {"nchw": x, "channels-last": last, "channel-major": major}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("n", [1, 3])
def test_forward_only_equals_im2col_path_and_counts_the_same(name, dtype, rtol, n):
    """Without a record, every memory order and bias option gives the im2col path's output and counters."""
    x, w, b, geom = _case(name, dtype, n=n)
    assert forward_kind(x.shape, w.shape, geom) == CASES[name][-1]
    for bias in (b, None):
        slow = CPUBackend(dtype)
        want = Backend.conv2d(slow, x, w, bias, geom, None)
        for order, xin in _orders(x).items():
            fast = CPUBackend(dtype)
            got = fast.conv2d(xin, w, bias, geom)
            assert got.shape == want.shape and got.dtype == want.dtype, order
            scale = np.abs(want).max()
            np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale, err_msg=order)
            assert fast.counters == slow.counters, order
            slow.reset_counters()
            Backend.conv2d(slow, x, w, bias, geom, None)


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[-1]])
def test_forward_only_equals_torch(name):
    """The forward-only kernels match torch's conv2d in float64."""
    torch = pytest.importorskip("torch")
    x, w, b, geom = _case(name, np.float64, seed=3)
    t, bot, left, r = geom.pads
    padded = torch.nn.functional.pad(torch.from_numpy(x), (left, r, t, bot))
    want = torch.nn.functional.conv2d(
        padded,
        torch.from_numpy(w),
        torch.from_numpy(b),
        stride=geom.strides,
        dilation=geom.dilation,
        groups=geom.groups,
    ).numpy()
    got = CPUBackend("float64").conv2d(x, w, b, geom)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_non_finite_input_spreads_as_on_the_gradient_path():
    """An infinity in the input: the forward-only output has the NaNs and infinities of the taps path."""
    x, w, b, geom = _case("depthwise-3x3-same", np.float64)
    x[1, 2, 4, 3] = np.inf
    x[2, 0, 0, 0] = np.nan
    got = CPUBackend("float64").conv2d(x, w, b, geom)
    for want in (
        CPUBackend("float64").conv2d(x, w, b, geom, {}),
        Backend.conv2d(CPUBackend("float64"), x, w, b, geom, None),
    ):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
    assert np.isnan(got).sum() < got.size // 10  # neighbours only, not whole rows


def test_a_non_finite_weight_spreads_through_the_padding_as_on_the_gradient_path():
    """A NaN weight reaches the border outputs through ``0 * NaN``, as on the im2col path."""
    x, w, b, geom = _case("depthwise-3x3-same", np.float64)
    w[2, 0, 0, 0] = np.nan
    got = CPUBackend("float64").conv2d(x, w, b, geom)
    want = Backend.conv2d(CPUBackend("float64"), x, w, b, geom, None)
    assert np.isnan(want[:, 2]).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_forward_only_memory_orders_and_predict_equals_gradient_path():
    """Pointwise keeps its input's memory order, depthwise hands channels-last on; predict equals the recorded forward."""
    from xai_core import nn

    g = nn.Graph((4, 10, 9), dtype="float64", seed=1)
    a = g.add(nn.Conv2D(8, 1), "input", name="expand")
    a = g.add(nn.ReLU6(), a)
    d = g.add(nn.DepthwiseConv2D(3, stride=2, padding="same"), a, name="dw")
    d = g.add(nn.Clip(-1.0, 1.0), d)
    p = g.add(nn.Conv2D(4, 1), d, name="project")
    q = g.add(nn.Conv2D(4, 1, stride=2), "input", name="short")
    s = g.add(nn.Add(), [p, q])
    g.add(nn.GlobalAveragePooling2D(), s)
    g.add(nn.Dense(3))
    X = np.random.default_rng(2).standard_normal((6, 4, 10, 9))
    backend = CPUBackend("float64")
    y = backend.conv2d(X, g.node("expand").layer.weight, None, g.node("expand").layer.geometry())
    assert y.transpose(1, 0, 2, 3).flags.c_contiguous
    dw = g.node("dw").layer
    z = backend.conv2d(y, dw.weight, dw.bias, dw.geometry())
    assert z.transpose(0, 2, 3, 1).flags.c_contiguous
    predicted = g.predict(X, backend)
    recorded = g.forward(X, backend, record=nn.Record()).reshape(len(X), -1)
    np.testing.assert_allclose(predicted, recorded, rtol=1e-12, atol=1e-13)
