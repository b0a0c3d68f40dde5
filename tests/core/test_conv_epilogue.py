"""A convolution's activation fused into its epilogue at inference computes and counts as unfused."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.epilogue import bias_clamp
from xai_core.nn import executor

# every backend that runs float networks (the edgetpu runs only int8-quantised models)
BACKENDS = [("cpu", {}), ("cpu", {"dtype": "float64"}), ("gpu", {}), ("tpu", {}), ("tpu_pod", {})]


def _network(layout="NCHW", seed=3):
    """Every kernel followed by a clamping activation, behind folded batch norms and dropouts."""
    shape = (3, 11, 10) if layout == "NCHW" else (11, 10, 3)
    axis = 0 if layout == "NCHW" else -1
    g = nn.Graph(shape, dtype="float64", seed=seed)
    a = g.add(nn.Conv2D(8, 3, stride=2, padding=1, layout=layout), "input", name="stem")
    a = g.add(nn.BatchNormalization(axis=axis), a, name="stem_bn")
    a = g.add(nn.ReLU6(), a, name="stem_act")
    b = g.add(nn.Conv2D(16, 1, layout=layout), a, name="expand")
    b = g.add(nn.Dropout(0.5), b)
    b = g.add(nn.ReLU(), b, name="expand_act")
    c = g.add(nn.DepthwiseConv2D(3, padding="same", layout=layout), b, name="dw")
    c = g.add(nn.BatchNormalization(axis=axis), c)
    c = g.add(nn.Clip(-0.5, 0.75), c, name="dw_act")
    d = g.add(nn.Conv2D(8, 1, layout=layout), c, name="project")
    d = g.add(nn.Clip(min_value=0.1), d, name="project_act")
    # a residual connection: the Add (after a folded batch norm) sums in the epilogue
    r = g.add(nn.Conv2D(8, 1, layout=layout), d, name="residual")
    r = g.add(nn.BatchNormalization(axis=axis), r)
    d = g.add(nn.Add(), [a, r], name="sum")
    # read twice: the convolution's own output is needed, so it is not fused
    e = g.add(nn.Conv2D(8, 1, layout=layout), d, name="twice")
    f = g.add(nn.ReLU(), e, name="twice_act")
    s = g.add(nn.Add(), [e, f])
    s = g.add(nn.Add(), [s, a])
    s = g.add(nn.DepthwiseConv2D(3, stride=2, padding=1, layout=layout), s, name="dw2")
    s = g.add(nn.LeakyReLU(0.1), s)  # not a clamp: not fused
    g.add(nn.GlobalAveragePooling2D(layout=layout), s)
    g.add(nn.Dense(4))
    rng = np.random.default_rng(seed)
    for node in g.nodes:
        for key, value in node.layer.params.items():
            value[...] = rng.standard_normal(value.shape) * (0.5 if key == "weight" else 1.0)
        for key in ("mean", "variance"):
            buf = getattr(node.layer, "buffers", {}).get(key)
            if buf is not None:
                buf[...] = rng.random(buf.shape) + (0.5 if key == "variance" else -0.5)
    return g.fold_batch_norm()


def _unfused(monkeypatch):
    monkeypatch.setattr(executor, "_epilogues", lambda *args, **kwargs: ({}, {}))


def _run(net, X, name, settings, stop=None):
    backend = xai.get_backend(name, **settings)
    out = net.forward(X.astype(backend.dtype), backend, stop=stop)
    return out, backend.counters


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("name, settings", BACKENDS)
def test_fused_equals_unfused_outputs_and_counters_on_every_backend(
    name, settings, layout, monkeypatch
):
    """Fused and unfused forward passes give the same outputs and exactly the same counters."""
    net = _network(layout)
    X = np.random.default_rng(0).standard_normal((5, *net.input_shape)) * 2
    fused, fused_counts = _run(net, X, name, settings)
    with monkeypatch.context() as m:
        _unfused(m)
        plain, plain_counts = _run(net, X, name, settings)
    assert fused_counts == plain_counts
    tol = 1e-12 if fused.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(fused, plain, rtol=tol, atol=tol)


def test_the_cpu_backend_fuses_every_clamped_convolution_and_no_other(monkeypatch):
    """Four convolutions meet their activation in the epilogue; the one read twice does not."""
    net = _network()
    seen = []
    fused = CPUBackend.conv2d_activated

    def spy(self, x, weight, bias, geometry, activation):
        seen.append(activation.name)
        return fused(self, x, weight, bias, geometry, activation)

    monkeypatch.setattr(CPUBackend, "conv2d_activated", spy)
    net.predict(np.ones((2, *net.input_shape)), CPUBackend("float64"))
    assert seen == ["stem_act", "expand_act", "dw_act", "project_act"]


def test_the_cpu_backend_sums_the_residual_in_the_epilogue(monkeypatch):
    """The convolution read only by an Add meets it in the epilogue; the Adds of other inputs do not."""
    net = _network()
    seen = []
    summed = CPUBackend.conv2d_added

    def spy(self, x, weight, bias, geometry, residual, add):
        seen.append(add.name)
        return summed(self, x, weight, bias, geometry, residual, add)

    monkeypatch.setattr(CPUBackend, "conv2d_added", spy)
    net.predict(np.ones((2, *net.input_shape)), CPUBackend("float64"))
    assert seen == ["sum"]


def _in_memory(a, order):
    """The NCHW-shaped ``a`` with its values in ``order`` memory (NCHW, channels-last or channel-major)."""
    if order == "channels-last":
        return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    if order == "channel-major":
        return np.ascontiguousarray(a.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    return np.ascontiguousarray(a)


@pytest.mark.parametrize("x_memory", ["NCHW", "channels-last", "channel-major"])
@pytest.mark.parametrize("residual_memory", ["NCHW", "channels-last", "channel-major"])
def test_a_residual_is_added_exactly_in_any_memory_order(x_memory, residual_memory):
    """The fused sum and its counters equal the convolution's, then the Add's, for any memory orders."""
    rng = np.random.default_rng(8)
    x = _in_memory(rng.standard_normal((3, 5, 4, 6)).astype(np.float32), x_memory)
    weight = rng.standard_normal((7, 5, 1, 1)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    residual = _in_memory(rng.standard_normal((3, 7, 4, 6)).astype(np.float32), residual_memory)
    add = nn.Add()
    add.build([(7, 4, 6), (7, 4, 6)], np.random.default_rng(0), np.float32)
    geom = ConvGeometry((1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1)
    plain, fused = CPUBackend(), CPUBackend()
    want = add.apply([plain.conv2d(x, weight, bias, geom), residual], plain, None)
    got = fused.conv2d_added(x, weight, bias, geom, residual, add)
    np.testing.assert_array_equal(got, want)
    assert fused.counters == plain.counters


@pytest.mark.parametrize(
    "node", ["stem", "stem_bn", "expand", "dw", "project", "dw_act", "residual"]
)
def test_a_requested_node_keeps_its_own_output(node, monkeypatch):
    """``activations`` of a convolution (or an identity after it) is its value before the activation."""
    net = _network()
    X = np.random.default_rng(1).standard_normal((4, *net.input_shape)) * 3
    got = net.activations(X, node, CPUBackend("float64"))
    with monkeypatch.context() as m:
        _unfused(m)
        want = net.activations(X, node, CPUBackend("float64"))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if node != "dw_act":
        assert got.min() < -0.5 and got.max() > 0.75  # not clamped by the activation after it


def test_bounds_changed_after_the_pass_was_planned_are_applied(monkeypatch):
    """The pass is planned once per target; a Clip's new bounds still reach the fused kernel."""
    net, fresh = _network(), _network()
    X = np.random.default_rng(4).standard_normal((4, *net.input_shape)) * 3
    before = net.predict(X, CPUBackend("float64"))  # plans (and caches) the fused pass
    for model in (net, fresh):
        model.node("dw_act").layer.min_value = -0.25
        model.node("dw_act").layer.max_value = 0.5
    got = net.predict(X, CPUBackend("float64"))
    with monkeypatch.context() as m:
        _unfused(m)
        want = fresh.predict(X, CPUBackend("float64"))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not np.allclose(got, before)


def test_fused_network_equals_torch():
    """The fused forward pass equals torch's convolutions and clamps on the same weights."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    net = _network()
    X = np.random.default_rng(2).standard_normal((3, *net.input_shape))

    def conv(t, name):
        layer = net.node(name).layer
        w, b = (torch.from_numpy(layer.params[k]) for k in ("weight", "bias"))
        return F.conv2d(t, w, b, layer.strides, layer.pads[::2], layer.dilation, layer.groups)

    t = torch.from_numpy(X)
    a = conv(t, "stem").clamp(0, 6)
    c = conv(conv(a, "expand").clamp(min=0), "dw").clamp(-0.5, 0.75)
    d = conv(c, "project").clamp(min=0.1)
    e = conv(a + conv(d, "residual"), "twice")
    want = (e + e.clamp(min=0) + a).numpy()
    got = net.activations(X, -5, CPUBackend("float64"))  # the second Add
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("where", ["input", "weight"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_values_spread_as_unfused(where, value, monkeypatch):
    """An infinity or NaN in the input or a depthwise weight spreads exactly as without fusion."""
    net = _network()
    X = np.random.default_rng(4).standard_normal((3, *net.input_shape))
    if where == "input":
        X[1, 2, 4, 5] = value
    else:
        net.node("dw").layer.params["weight"][5, 0, 0, 0] = value
    got = net.forward(X, CPUBackend("float64"), stop="dw_act")  # activations() refuses NaN
    with monkeypatch.context() as m:
        _unfused(m)
        want = net.forward(X, CPUBackend("float64"), stop="dw_act")
    assert not np.isfinite(want).all() or where == "input"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("bounds", [(0.0, 6.0), (0.0, np.inf), (-np.inf, 0.25), None])
def test_bias_clamp_equals_numpy(dtype, axis, bounds):
    """The compiled epilogue equals ``np.clip(out + bias, lo, hi)``, NaN and infinities included."""
    rng = np.random.default_rng(5)
    out = (rng.standard_normal((7, 9)) * 4).astype(dtype)
    out[1, 2], out[3, 4], out[5, 6] = np.nan, np.inf, -np.inf
    bias = rng.standard_normal(out.shape[axis]).astype(dtype)
    for b in (bias, None):
        want = out + (0 if b is None else (b if axis == 1 else b[:, None]))
        if bounds is not None:
            want = np.clip(want, *bounds)
        got = bias_clamp(out.copy(), b, bounds, axis=axis)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


def test_a_convolution_subclass_with_its_own_apply_keeps_it(monkeypatch):
    """A Conv2D subclass that changes ``apply`` is run as itself, then the activation."""

    class Doubled(nn.Conv2D):
        def apply(self, x, backend, record):
            return 2 * super().apply(x, backend, record)

    g = nn.Graph((2, 6, 5), dtype="float64", seed=0)
    g.add(Doubled(3, 1), "input", name="conv")
    g.add(nn.ReLU6(), "conv")
    g.add(nn.Flatten())
    X = np.random.default_rng(6).standard_normal((3, 2, 6, 5)) * 4
    layer = g.node("conv").layer
    want = np.clip(2 * np.einsum("fc,nchw->nfhw", layer.weight[:, :, 0, 0], X), 0, 6)
    np.testing.assert_allclose(g.predict(X, CPUBackend("float64")), want.reshape(3, -1))


def test_a_backend_subclass_with_its_own_conv2d_keeps_it():
    """A cpu subclass that changes ``conv2d`` runs it for every convolution, fused or not."""
    net = _network()
    X = np.random.default_rng(7).standard_normal((2, 3, 11, 10))
    convolutions = sum(isinstance(node.layer, nn.Conv2D) for node in net.nodes)

    class Logged(CPUBackend):
        def conv2d(self, x, weight, bias, geometry, record=None):
            self.calls += 1
            return Backend.conv2d(self, x, weight, bias, geometry, record)

    backend = Logged("float64")
    backend.calls = 0
    got = net.predict(X, backend)
    assert backend.calls == convolutions
    np.testing.assert_allclose(got, net.predict(X, CPUBackend("float64")), rtol=0, atol=1e-10)
