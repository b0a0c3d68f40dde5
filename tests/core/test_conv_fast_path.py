"""The cpu backend's im2col-free convolutions equal the im2col path, torch, and count the same."""

from __future__ import annotations

import numpy as np
import pytest

from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.conv_taps import fast_kind

# (channels, filters, kernel, strides, pads, dilation, groups, expected kernel)
CASES = {
    "depthwise-3x3-same": (6, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6, "depthwise"),
    "depthwise-strided-asymmetric": (5, 5, (3, 3), (2, 2), (0, 1, 0, 1), (1, 1), 5, "depthwise"),
    "depthwise-dilated-multiplier": (4, 8, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 4, "depthwise"),
    "depthwise-dilated-asymmetric": (4, 4, (3, 2), (1, 1), (2, 0, 1, 3), (2, 1), 4, "depthwise"),
    "depthwise-5x3-mixed": (3, 9, (5, 3), (2, 1), (1, 2, 0, 1), (1, 2), 3, "depthwise"),
    "pointwise": (6, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "pointwise"),
    "pointwise-strided": (6, 4, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, "pointwise"),
    "taps-3x3": (3, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "taps"),
    "taps-dilated-asymmetric": (2, 3, (3, 2), (1, 1), (2, 0, 1, 3), (2, 3), 1, "taps"),
    "taps-strided-3x3": (4, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, "taps"),
    "taps-strided-valid": (3, 4, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1, "taps"),
    "taps-strided-dilated-asymmetric": (3, 5, (3, 2), (2, 3), (2, 0, 1, 3), (2, 1), 1, "taps"),
    "taps-stride-3-dilated": (2, 3, (2, 3), (3, 2), (1, 2, 2, 0), (3, 2), 1, "taps"),
    "taps-1x1-strided-padded": (3, 4, (1, 1), (2, 2), (1, 0, 0, 1), (1, 1), 1, "taps"),
    "taps-stride-1x2-7x1": (2, 3, (7, 1), (1, 2), (3, 3, 0, 0), (1, 1), 1, "taps"),
    "taps-one-channel": (1, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "taps"),
    "taps-one-channel-strided": (1, 3, (3, 2), (2, 1), (0, 1, 2, 0), (2, 1), 1, "taps"),
    "grouped-im2col": (4, 6, (3, 3), (2, 1), (1, 1, 0, 2), (1, 1), 2, None),
}


def _case(name, dtype, seed=0):
    c, f, k, s, p, d, g, _ = CASES[name]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, c, 9, 8)).astype(dtype)
    w = rng.standard_normal((f, c // g, *k)).astype(dtype)
    b = rng.standard_normal(f).astype(dtype)
    return x, w, b, ConvGeometry(k, s, p, d, g)


def _run(backend, conv, vjp, x, w, b, geom, seed=1):
    """Forward, then every gradient for a random output gradient; the counters of both."""
    record = {}
    y = conv(backend, x, w, b, geom, record)
    grad = np.random.default_rng(seed).standard_normal(y.shape).astype(x.dtype)
    gx, grads = vjp(backend, grad, w, geom, record, use_bias=True)
    return np.asarray(y), np.asarray(gx), grads, backend.counters


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_fast_path_equals_im2col_path_and_counts_the_same(name, dtype, rtol):
    """Forward, input and weight gradients agree to rounding; the counters are identical."""
    x, w, b, geom = _case(name, dtype)
    assert fast_kind(x.shape, w.shape, geom) == CASES[name][-1]
    fast = _run(CPUBackend(dtype), CPUBackend.conv2d, CPUBackend.conv2d_vjp, x, w, b, geom)
    slow = _run(CPUBackend(dtype), Backend.conv2d, Backend.conv2d_vjp, x, w, b, geom)
    for got, want in [(fast[0], slow[0]), (fast[1], slow[1])] + [
        (fast[2][k], slow[2][k]) for k in ("weight", "bias")
    ]:
        assert got.shape == want.shape and got.dtype == want.dtype
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale)
    assert fast[3] == slow[3]


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[-1]])
def test_fast_path_equals_torch_and_any_memory_order(name):
    """The fast path matches torch's conv2d and autograd, for NCHW and channels-last inputs."""
    torch = pytest.importorskip("torch")
    x, w, b, geom = _case(name, np.float64, seed=3)
    t, bot, left, r = geom.pads
    xt = torch.from_numpy(x).requires_grad_(True)
    wt = torch.from_numpy(w).requires_grad_(True)
    bt = torch.from_numpy(b).requires_grad_(True)
    padded = torch.nn.functional.pad(xt, (left, r, t, bot))
    yt = torch.nn.functional.conv2d(
        padded, wt, bt, stride=geom.strides, dilation=geom.dilation, groups=geom.groups
    )
    grad = np.random.default_rng(4).standard_normal(tuple(yt.shape))
    yt.backward(torch.from_numpy(grad))
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for xin in (x, channels_last):
        backend, record = CPUBackend("float64"), {}
        y = backend.conv2d(xin, w, b, geom, record)
        assert record["fast"] == CASES[name][-1]
        np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
        gx, grads = backend.conv2d_vjp(grad, w, geom, record, use_bias=True)
        np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads["weight"], wt.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads["bias"], bt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_simulated_backends_keep_the_im2col_products():
    """A backend with its own matmul sees every product of the im2col path, as before."""

    class Recording(CPUBackend):
        name = "recording"

        def matmul(self, a, b):
            self.shapes.append((a.shape, b.shape))
            return super().matmul(a, b)

    x, w, b, geom = _case("depthwise-3x3-same", np.float32)
    backend = Recording()
    backend.shapes = []
    record = {}
    y = backend.conv2d(x, w, b, geom, record)
    assert "fast" not in record and "cols" in record
    assert len(backend.shapes) == 6 and backend.shapes[0] == ((3 * 9 * 8, 9), (9, 1))
    np.testing.assert_allclose(y, CPUBackend().conv2d(x, w, b, geom), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["taps-3x3", "taps-strided-dilated-asymmetric"])
def test_backward_on_another_backend_than_the_forward(name):
    """A record of the fast forward serves the im2col backward (and the reverse)."""
    x, w, b, geom = _case(name, np.float64)
    grad = np.random.default_rng(5).standard_normal((3, w.shape[0], *geom.out_hw(x.shape[2:])))
    fast_record, slow_record = {}, {}
    CPUBackend("float64").conv2d(x, w, b, geom, fast_record)
    Backend.conv2d(CPUBackend("float64"), x, w, b, geom, slow_record)
    a = Backend.conv2d_vjp(CPUBackend("float64"), grad, w, geom, fast_record, use_bias=True)
    c = CPUBackend("float64").conv2d_vjp(grad, w, geom, slow_record, use_bias=True)
    np.testing.assert_allclose(a[0], c[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a[1]["weight"], c[1]["weight"], rtol=1e-12, atol=1e-12)


def test_network_of_fast_and_im2col_layers_equals_the_im2col_network():
    """A graph mixing every kernel with im2col convolutions: outputs and input gradients agree."""
    import xai_core as xai
    from xai_core import nn

    class Im2col(CPUBackend):
        name = "im2col-only"
        conv2d, conv2d_vjp = Backend.conv2d, Backend.conv2d_vjp

    g = nn.Graph((3, 11, 10), dtype="float64", seed=2)
    a = g.add(nn.DepthwiseConv2D(3, padding="same"), "input", name="dw")
    b = g.add(nn.Conv2D(6, 1), a, name="pw")
    c = g.add(nn.ReLU6(), b, name="relu")
    d = g.add(nn.Conv2D(6, 3, padding=1, dilation=1), c, name="taps")
    e = g.add(nn.Add(), [c, d], name="add")
    f = g.add(nn.Conv2D(4, 3, stride=2, padding=1), e, name="strided")  # taps, strided
    f = g.add(nn.Conv2D(4, 3, padding=1, groups=2), f, name="grouped")  # im2col
    h = g.add(nn.Conv2D(4, 1, stride=2), e, name="short")  # pointwise, strided
    s = g.add(nn.Multiply(), [f, h], name="mul")
    p = g.add(nn.GlobalAveragePooling2D(), s)
    g.add(nn.Dense(3), p)
    g.add(nn.Softmax())
    X = np.random.default_rng(6).standard_normal((5, 3, 11, 10))
    fast, slow = CPUBackend("float64"), Im2col("float64")
    np.testing.assert_allclose(g.predict(X, fast), g.predict(X, slow), rtol=1e-12, atol=1e-14)
    gx = g.gradient(X, [0, 1, 2, 0, 1], backend=fast)
    assert gx.flags.c_contiguous
    np.testing.assert_allclose(gx, g.gradient(X, [0, 1, 2, 0, 1], backend=slow), atol=1e-13)
    assert fast.counters == slow.counters
    assert isinstance(xai.get_backend("cpu"), CPUBackend)


def test_one_memory_order_keeps_values_and_unifies_order():
    """Operands in mixed memory orders come back equal, in the first operand's order."""
    from xai_core.backends.base import one_memory_order

    rng = np.random.default_rng(7)
    nchw = rng.standard_normal((2, 3, 4, 5))
    nhwc = np.ascontiguousarray(rng.standard_normal((2, 3, 4, 5)).transpose(0, 2, 3, 1))
    last = nhwc.transpose(0, 3, 1, 2)
    out = one_memory_order([last, nchw, np.float64(2.0)])
    assert out[0] is last and out[2] == 2.0
    np.testing.assert_array_equal(out[1], nchw)
    assert out[1].transpose(0, 2, 3, 1).flags.c_contiguous
    again = one_memory_order([nchw, last])
    assert again[1].flags.c_contiguous
    np.testing.assert_array_equal(again[1], last)


def test_one_channel_taps_in_many_row_blocks_equal_torch(monkeypatch):
    """The few-channel kernel's blocks of gathered columns cover every row once."""
    torch = pytest.importorskip("torch")
    from xai_core.kernels import conv_taps

    monkeypatch.setattr(conv_taps, "COLUMN_BYTES", 1)  # blocks of 1024 rows
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 1, 30, 29))
    w = rng.standard_normal((4, 1, 3, 3))
    geom = ConvGeometry((3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    xt = torch.from_numpy(x).requires_grad_(True)
    yt = torch.nn.functional.conv2d(xt, torch.from_numpy(w), padding=1)
    grad = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.from_numpy(grad))
    backend, record = CPUBackend("float64"), {}
    y = backend.conv2d(x, w, None, geom, record)
    assert record["fast"] == "taps"
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    gx, _ = backend.conv2d_vjp(grad, w, geom, record, use_bias=False, param_grads=False)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
