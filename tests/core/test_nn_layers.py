"""Layers: forward passes against direct oracles, backward passes against central finite differences."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.signal import correlate2d

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

nn = xai.nn
EPS = 1e-6
PROPERTY = settings(max_examples=20, deadline=None)


def b64() -> CPUBackend:
    """A float64 CPU backend: finite differences need the precision."""
    return CPUBackend(dtype="float64")


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """Relative error of two arrays, with a floor on the norm set by the differences' rounding.

    A central difference of an output of size ~5 rounds to about 2.2e-16 * 5 / EPS ~ 1e-9
    per entry; with a tenfold margin the floor ``1e-2 * sqrt(size)`` makes the test below
    (``< 1e-6``) absolute at 1e-8 per entry for gradients too small for a relative test.
    """
    floor = 1e-2 * np.sqrt(np.size(a))
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), floor))


def fd_input_vjp(f, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Central differences of sum(r_i * f(x)_i) for each row, all perturbations in one batch."""
    n, shape = x.shape[0], x.shape[1:]
    d = int(np.prod(shape))
    steps = (np.eye(d) * EPS).reshape(d, *shape)
    xp = (x[:, None] + steps[None]).reshape(n * d, *shape)
    xm = (x[:, None] - steps[None]).reshape(n * d, *shape)
    fp, fm = f(xp).reshape(n, d, -1), f(xm).reshape(n, d, -1)
    return np.einsum("ndo,no->nd", (fp - fm) / (2 * EPS), r.reshape(n, -1)).reshape(x.shape)


def fd_param_grads(f, params: dict, r: np.ndarray) -> dict:
    """Central differences of sum(r * f()) with respect to every parameter element."""
    out = {}
    for key, p in params.items():
        g = np.zeros_like(p)
        flat, gflat = p.reshape(-1), g.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + EPS
            up = np.sum(r * f())
            flat[k] = old - EPS
            down = np.sum(r * f())
            flat[k] = old
            gflat[k] = (up - down) / (2 * EPS)
        out[key] = g
    return out


def randomize(layers, rng, keys=("weight", "bias"), scale=1.0) -> None:
    """Give parameters random values, so no unit sits exactly on a ReLU kink (biases start at 0)."""
    for layer in layers:
        for key, p in layer.params.items():
            if key in keys:
                layer.params[key] = scale * rng.normal(size=p.shape)


def check_layer(layer, x: np.ndarray, seed: int = 0) -> None:
    """Assert the layer's input and parameter gradients equal central differences (float64)."""
    be = b64()
    rng = np.random.default_rng(seed)
    layer.build(x.shape[1:], rng, np.float64)
    randomize([layer], rng)
    y = layer.forward(x, be, cache=True)
    assert y.shape == (len(x), *layer.output_shape)
    r = rng.normal(size=y.shape)
    dx = layer.backward(r, be)
    grads = dict(layer.grads)
    fd = fd_input_vjp(lambda z: layer.forward(z, be, cache=False), x, r)
    assert dx.shape == x.shape
    assert rel_err(dx, fd) < 1e-6
    fd_p = fd_param_grads(lambda: layer.forward(x, be, cache=False), layer.params, r)
    assert set(grads) == set(layer.params)
    for key in layer.params:
        assert grads[key].shape == layer.params[key].shape
        assert rel_err(grads[key], fd_p[key]) < 1e-6, key


# -- finite differences, per layer, over random shapes ---------------------------------


@PROPERTY
@given(
    n=st.integers(1, 4), n_in=st.integers(1, 6), units=st.integers(1, 5), seed=st.integers(0, 2**16)
)
def test_dense_gradients_match_finite_differences(n, n_in, units, seed):
    """Dense: input, weight and bias gradients equal central differences."""
    x = np.random.default_rng(seed).normal(size=(n, n_in))
    check_layer(nn.Dense(units), x, seed)


@PROPERTY
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    h=st.integers(1, 7),
    w=st.integers(1, 7),
    filters=st.integers(1, 3),
    kh=st.integers(1, 3),
    kw=st.integers(1, 3),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_conv2d_gradients_match_finite_differences(
    n, c, h, w, filters, kh, kw, stride, padding, seed
):
    """Conv2D with any stride and padding: input, weight and bias gradients equal central differences."""
    assume(h + 2 * padding >= kh and w + 2 * padding >= kw)
    x = np.random.default_rng(seed).normal(size=(n, c, h, w))
    check_layer(nn.Conv2D(filters, (kh, kw), stride=stride, padding=padding), x, seed)


@PROPERTY
@given(
    kind=st.sampled_from(["max", "avg"]),
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    h=st.integers(1, 7),
    w=st.integers(1, 7),
    ph=st.integers(1, 3),
    pw=st.integers(1, 3),
    stride=st.integers(1, 3),
    padding=st.integers(0, 1),
    seed=st.integers(0, 2**16),
)
def test_pool_gradients_match_finite_differences(kind, n, c, h, w, ph, pw, stride, padding, seed):
    """MaxPool2D and AvgPool2D, overlapping or not, padded or not: gradients equal central differences."""
    assume(2 * padding <= min(ph, pw) and h + 2 * padding >= ph and w + 2 * padding >= pw)
    x = np.random.default_rng(seed).normal(size=(n, c, h, w))
    cls = nn.MaxPool2D if kind == "max" else nn.AvgPool2D
    check_layer(cls((ph, pw), stride=stride, padding=padding), x, seed)


@PROPERTY
@given(
    name=st.sampled_from(["relu", "tanh", "sigmoid", "linear", "softmax", "flatten", "reshape"]),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    n=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_shape_and_activation_layers_match_finite_differences(name, shape, n, seed):
    """Activations, Flatten and Reshape: input gradients equal central differences."""
    layers = {
        "flatten": nn.Flatten,
        "reshape": lambda: nn.Reshape((-1,) + (1,) * (len(shape) - 1)),
    }
    layer = layers[name]() if name in layers else nn.ACTIVATIONS[name]()
    x = 2 * np.random.default_rng(seed).normal(size=(n, *shape))
    check_layer(layer, x, seed)


@PROPERTY
@given(
    sizes=st.lists(st.integers(1, 5), min_size=0, max_size=3),
    n_in=st.integers(1, 5),
    n_out=st.integers(2, 4),
    activation=st.sampled_from(["tanh", "sigmoid", "relu", "linear"]),
    output=st.sampled_from(["softmax", "sigmoid", "linear"]),
    seed=st.integers(0, 2**16),
)
def test_whole_mlp_gradients_match_finite_differences(sizes, n_in, n_out, activation, output, seed):
    """A whole MLP: d output[target] / d X per row, and every parameter gradient, equal differences."""
    net = nn.mlp(
        n_in, sizes, n_out, activation=activation, output=output, seed=seed, dtype="float64"
    )
    check_network(net, seed)


@PROPERTY
@given(
    c=st.integers(1, 2),
    size=st.integers(5, 8),
    filters=st.integers(1, 3),
    stride=st.integers(1, 2),
    pool=st.sampled_from(["max", "avg"]),
    seed=st.integers(0, 2**16),
)
def test_whole_cnn_gradients_match_finite_differences(c, size, filters, stride, pool, seed):
    """A whole CNN from flat input (Reshape, Conv2D, ReLU, pool, Flatten, Dense, Softmax) agrees too."""
    pool_layer = nn.MaxPool2D(2) if pool == "max" else nn.AvgPool2D(2, stride=1)
    net = nn.Sequential(
        [
            nn.Reshape((c, size, size)),
            nn.Conv2D(filters, 3, stride=stride, padding=1),
            nn.Tanh(),
            pool_layer,
            nn.Flatten(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(c * size * size,),
        seed=seed,
        dtype="float64",
    )
    check_network(net, seed)


def check_network(net, seed: int) -> None:
    """Sequential.gradient and Sequential.backward against central differences in float64."""
    be = b64()
    rng = np.random.default_rng(seed)
    randomize(net.layers, rng, keys=("bias",), scale=0.5)  # Glorot weights keep softmax unsaturated
    X = rng.normal(size=(3, *net.input_shape))
    target = rng.integers(0, net.n_outputs, size=3)
    g = net.gradient(X, target, backend=be)
    onehot = np.eye(net.n_outputs)[target]
    fd = fd_input_vjp(lambda z: net.predict(z, be), X, onehot)
    assert g.shape == X.shape and g.dtype == np.float64
    assert rel_err(g, fd) < 1e-6
    r = rng.normal(size=(3, net.n_outputs))
    net.forward(X, be, cache=True)
    net.backward(r, be)
    for layer in net.layers:
        fd_p = fd_param_grads(lambda: net.predict(X, be), layer.params, r)
        for key in layer.params:
            assert rel_err(layer.grads[key], fd_p[key]) < 1e-6, (layer.name, key)


# -- forward passes against direct oracles ---------------------------------------------


@pytest.mark.parametrize(
    ("stride", "padding", "kernel"),
    [(1, 0, (3, 3)), (2, 1, (3, 3)), (3, 2, (2, 3)), (1, 1, (1, 1))],
    ids=["s1p0", "s2p1", "s3p2-rect", "1x1"],
)
def test_conv2d_forward_equals_scipy_correlation(stride, padding, kernel):
    """Conv2D output equals scipy's 2-D cross-correlation, strided, summed over channels, plus bias."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 7, 6))
    conv = nn.Conv2D(4, kernel, stride=stride, padding=padding)
    conv.build(x.shape[1:], rng, np.float64)
    conv.bias = rng.normal(size=4)
    y = conv.forward(x, b64())
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    for i in range(2):
        for o in range(4):
            full = sum(correlate2d(xp[i, c], conv.weight[o, c], mode="valid") for c in range(3))
            np.testing.assert_allclose(y[i, o], full[::stride, ::stride] + conv.bias[o], atol=1e-12)


@pytest.mark.parametrize(
    ("cls", "reduce"), [(nn.MaxPool2D, np.max), (nn.AvgPool2D, np.mean)], ids=["max", "avg"]
)
def test_pools_equal_brute_force_windows(cls, reduce):
    """Pools equal a per-window brute-force reduction, with overlapping strides and padding."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 2, 7, 5))
    layer = cls(3, stride=2, padding=1)
    layer.build(x.shape[1:], rng, np.float64)
    y = layer.forward(x, b64())
    fill = -np.inf if cls is nn.MaxPool2D else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=fill)
    expected = np.array(
        [
            [
                [reduce(xp[i, c, r : r + 3, s : s + 3]) for s in range(0, 5, 2)]
                for r in range(0, 7, 2)
            ]
            for i in range(2)
            for c in range(2)
        ]
    ).reshape(y.shape)
    np.testing.assert_allclose(y, expected, atol=1e-12)


def test_col2im_is_the_adjoint_of_im2col():
    """<im2col(x), C> == <x, col2im(C)> for any x and C: col2im is the exact adjoint."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 6, 5))
    cols = nn.im2col(x, 3, 2, stride=2, padding=1)
    c = rng.normal(size=cols.shape)
    back = nn.col2im(c, x.shape, 3, 2, stride=2, padding=1)
    assert back.shape == x.shape
    assert np.isclose(np.sum(cols * c), np.sum(x * back), rtol=1e-12)


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation",
    [((3, 3), 1, 1, 1), ((3, 2), (2, 1), (0, 2, 1, 0), 1), ((2, 3), 2, (1, 0, 2, 1), (2, 1))],
)
def test_col2im_equals_a_scatter_add_of_every_row_across_image_blocks(
    kernel, stride, padding, dilation, monkeypatch
):
    """col2im equals np.add.at of each row onto its window, also when images span several blocks."""
    import importlib

    lowering = importlib.import_module("xai_core.kernels.im2col")

    monkeypatch.setattr(lowering, "_BLOCK_BYTES", 7000)  # a few images per block, the last short
    rng = np.random.default_rng(3)
    n, c, h, w = 40, 5, 9, 8
    kh, kw = kernel
    x_shape = (n, c, h, w)
    cols = nn.im2col(rng.normal(size=x_shape), kh, kw, stride, padding, dilation=dilation)
    g = rng.normal(size=cols.shape).astype(np.float32)
    # reference: where each entry of im2col came from, read off im2col of the pixel indices
    index = np.arange(n * c * h * w, dtype=np.float64).reshape(x_shape) + 1
    source = nn.im2col(index, kh, kw, stride, padding, dilation=dilation).astype(np.int64) - 1
    want = np.zeros(n * c * h * w)
    inside = source >= 0
    np.add.at(want, source[inside], g[inside].astype(np.float64))
    got = nn.col2im(g, x_shape, kh, kw, stride, padding, dilation)
    assert got.shape == x_shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want.reshape(x_shape), rtol=1e-5, atol=1e-5)


def test_softmax_and_sigmoid_are_stable_for_large_inputs():
    """Softmax and Sigmoid of ±1000 stay finite, with no overflow warnings, in float32."""
    be = CPUBackend()
    x = np.array([[1000.0, -1000.0, 0.0]], dtype=np.float32)
    with np.errstate(over="raise", invalid="raise"):
        p = nn.Softmax().forward(x, be)
        s = nn.Sigmoid().forward(x, be)
    np.testing.assert_allclose(p, [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(s, [[1.0, 0.0, 0.5]])


# -- the network object ----------------------------------------------------------------


def test_layers_are_named_uniquely_and_found_by_name_or_index():
    """Unnamed layers get '<type>_<k>' names; layers are found by name or (negative) index."""
    net = nn.Sequential(
        [nn.Dense(3, name="dense_1"), nn.ReLU(), nn.Dense(2), nn.ReLU(), nn.Softmax()],
        input_shape=(4,),
    )
    assert [layer.name for layer in net] == ["dense_1", "relu_1", "dense_2", "relu_2", "softmax_1"]
    assert net["relu_2"] is net.layers[3] and net[-1] is net.layers[4]
    with pytest.raises(xai.UnknownNameError, match="Unknown layer 'relu_9'. Available: dense_1"):
        net.layer_index("relu_9")
    with pytest.raises(xai.ValidationError, match="out of range for a network of 5 layers"):
        net.layer_index(5)
    with pytest.raises(xai.ValidationError, match=r"\['a'\] appear more than once"):
        nn.Sequential([nn.Dense(2, name="a"), nn.ReLU(name="a")])


def test_activations_equal_partial_forward_passes():
    """activations(X, layer) equals running the layers up to it, by name and by index."""
    net = nn.mlp(4, (5, 3), 2, activation="relu", dtype="float64")
    X = np.random.default_rng(0).normal(size=(6, 4))
    be = b64()
    h = X @ net[0].weight + net[0].bias
    np.testing.assert_allclose(net.activations(X, "dense_1", be), h, rtol=1e-12)
    np.testing.assert_allclose(net.activations(X, 1, be), np.maximum(h, 0), rtol=1e-12)
    np.testing.assert_allclose(net.activations(X, -1, be), net.predict(X, be))


def test_summary_counts_parameters_and_macs():
    """The summary's parameters and MACs per sample equal the closed forms of each layer."""
    net = nn.Sequential(
        [
            nn.Reshape((1, 8, 8)),
            nn.Conv2D(4, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.Flatten(),
            nn.Dense(5),
            nn.Softmax(),
        ],
        input_shape=(64,),
    )
    s = net.summary()
    conv_macs, dense_macs = 8 * 8 * 4 * 1 * 9, 4 * 4 * 4 * 5
    assert s.macs == net.macs_per_sample == conv_macs + dense_macs
    assert s.n_params == net.n_params == (4 * 9 + 4) + (64 * 5 + 5)
    text = str(s)
    assert "conv2d_1" in text and "(4, 8, 8)" in text and f"{conv_macs:,}" in text
    assert "<table>" in s._repr_html_() and len(s.to_frame()) == 7
    assert "maxpool2d_1: MaxPool2D" in repr(net)


def test_shape_errors_are_clear_at_build_time():
    """A Dense after a convolution without Flatten, or a conv on flat input, fails when built."""
    with pytest.raises(xai.ShapeError, match="Put Flatten"):
        nn.Sequential([nn.Conv2D(2), nn.Dense(3)], input_shape=(1, 5, 5))
    with pytest.raises(xai.ShapeError, match=r"Reshape\(\(1, 28, 28\)\)"):
        nn.Sequential([nn.Conv2D(2)], input_shape=(784,))
    with pytest.raises(xai.ShapeError, match="does not fit"):
        nn.Sequential([nn.Conv2D(2, 5)], input_shape=(1, 3, 3))
    with pytest.raises(xai.ValidationError, match="no weights yet"):
        nn.Sequential([nn.Dense(2)]).predict(np.zeros((1, 3)))


def test_backward_before_forward_is_an_error():
    """A backward pass without a cached forward pass names the layer and the fix."""
    dense = nn.Dense(2, name="d")
    dense.build((3,), np.random.default_rng(0), np.float64)
    with pytest.raises(
        xai.ValidationError, match="'d': backward needs a forward pass with cache=True"
    ):
        dense.backward(np.ones((1, 2)), b64())


def test_every_matmul_goes_through_the_backend():
    """Forward and backward matmul counts and MACs equal the sums of M*K*N over the layers."""
    net = nn.Sequential(
        [
            nn.Reshape((1, 6, 6)),
            nn.Conv2D(2, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(36,),
    )
    be = CPUBackend()
    n = 5
    X = np.random.default_rng(0).random((n, 36), dtype=np.float32)
    net.forward(X, be, cache=True)
    fwd = n * 16 * 9 * 2 + n * 32 * 3  # conv (n*oh*ow, 9) @ (9, 2), dense (n, 32) @ (32, 3)
    assert be.counters["matmuls"] == 2 and be.counters["macs"] == fwd
    net.backward(np.ones((n, 3), dtype=np.float32), be)  # weight grads of both, input grads of both
    assert be.counters["matmuls"] == 2 + 4 and be.counters["macs"] == 3 * fwd
    assert be.counters["elementwise_ops"] > 0


def test_cnn_builder():
    """nn.cnn builds the small image CNN: flattened input, optional named embedding, softmax output."""
    net = nn.cnn(hidden=32, n_outputs=3, channels=(4,))
    assert net.input_shape == (784,) and net.image_shape == (28, 28)
    assert [type(layer).__name__ for layer in net.layers] == [
        "Reshape",
        "Conv2D",
        "ReLU",
        "MaxPool2D",
        "Flatten",
        "Dense",
        "ReLU",
        "Dense",
        "Softmax",
    ]
    X = np.random.default_rng(0).random((2, 784)).astype(np.float32)
    assert xai.ModelRunner(net).activations(X, "embedding").shape == (2, 32)
    np.testing.assert_allclose(net.predict(X).sum(axis=1), 1.0, rtol=1e-6)
    assert nn.cnn((3, 8, 8)).image_shape == (3, 8, 8)
    assert nn.cnn((12, 12)).image_shape == (12, 12) and nn.cnn((12, 12)).input_shape == (144,)
    with pytest.raises(xai.ShapeError, match=r"reads channels first; got \(8, 8, 3\)"):
        nn.cnn((8, 8, 3))
    with pytest.raises(xai.ShapeError, match="image_shape must be"):
        nn.cnn((5, 6, 7))


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)], ids=["2d", "3d", "4d"])
def test_matmul_by_a_shared_weight_is_one_gemm_with_torchs_gradients(lead):
    """``x @ W`` with ``W`` one matrix for every sample is one backend GEMM of all rows; its
    value and both gradients (the input's and, when asked, the weight's, summed over every
    matrix of x) equal torch autograd in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, *lead, 5, 6))
    w = rng.normal(size=(1, *(1 for _ in lead), 6, 7))
    g = rng.normal(size=(4, *lead, 5, 7))
    layer = nn.MatMul()
    layer.build([x.shape[1:], w.shape[1:]], None, np.float64)
    backend = xai.get_backend("cpu", dtype="float64")
    record: dict = {}
    out = layer.apply([x, w], backend, record)
    assert backend.counters["matmuls"] == 1
    (gx, gw), _ = layer.vjp(g, backend, record, needs=(True, True))
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = tx @ tw
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(out, ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-12)
    (gx_only, none), _ = layer.vjp(g, backend, record, needs=(True, False))
    assert none is None
    np.testing.assert_array_equal(gx_only, gx)
