"""New layers inside graphs: gradients against central differences, shapes, errors, every backend."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

nn = xai.nn
EPS = 1e-6


def b64() -> CPUBackend:
    """A float64 CPU backend: finite differences need the precision."""
    return CPUBackend(dtype="float64")


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """Relative error with an absolute floor for tiny gradients (as in test_nn_layers)."""
    floor = 1e-2 * np.sqrt(np.size(a))
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), floor))


def check_graph(g: "nn.Graph", X: np.ndarray, seed: int = 0) -> None:
    """Input and parameter gradients of sum(r * g(X)) equal central differences (float64)."""
    be = b64()
    rng = np.random.default_rng(seed)
    for layer in g.layers:
        for key, p in layer.params.items():
            layer.params[key] = rng.normal(size=p.shape) * (0.5 if key == "gamma" else 1.0) + (
                1.0 if key == "gamma" else 0.0
            )
    record = nn.Record()
    y = g.forward(X, be, record=record)
    assert y.shape == (len(X), *g.output_shape)
    r = rng.normal(size=y.shape)
    gx, grads = g.vjp(r, be, record)
    assert gx.shape == X.shape
    flat = X.reshape(len(X), -1)
    d = flat.shape[1]
    steps = np.eye(d) * EPS
    xp = (flat[:, None] + steps[None]).reshape(-1, *X.shape[1:])
    xm = (flat[:, None] - steps[None]).reshape(-1, *X.shape[1:])
    fp = g.forward(xp, be).reshape(len(X), d, -1)
    fm = g.forward(xm, be).reshape(len(X), d, -1)
    fd = np.einsum("ndo,no->nd", (fp - fm) / (2 * EPS), r.reshape(len(X), -1))
    assert rel_err(gx.reshape(len(X), -1), fd) < 1e-6
    for node in g.nodes:
        assert set(grads.get(node.name, {})) == set(node.layer.params)
        for key, p in node.layer.params.items():
            fdp = np.zeros_like(p)
            for k in range(p.size):
                old = p.flat[k]
                p.flat[k] = old + EPS
                up = np.sum(r * g.forward(X, be))
                p.flat[k] = old - EPS
                down = np.sum(r * g.forward(X, be))
                p.flat[k] = old
                fdp.flat[k] = (up - down) / (2 * EPS)
            assert grads[node.name][key].shape == p.shape
            assert rel_err(grads[node.name][key], fdp) < 1e-6, (node.name, key)


def one(layer, shape, n=2, seed=0, layout="NCHW"):
    """A float64 graph of one layer over samples of ``shape``, and random inputs."""
    g = nn.Graph(shape, dtype="float64", layout=layout)
    g.add(layer)
    return g, np.random.default_rng(seed + 1).normal(size=(n, *shape))


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda: nn.Conv2D(4, 3, stride=2, padding="same", groups=2), (4, 7, 6)),
        (lambda: nn.Conv2D(2, (3, 2), stride=(1, 2), padding=(0, 1, 2, 0), dilation=2), (3, 8, 7)),
        (lambda: nn.Conv2D(3, 2, use_bias=False, layout="NHWC"), (5, 4, 2)),
        (lambda: nn.DepthwiseConv2D(3, stride=2, padding="same", depth_multiplier=2), (3, 6, 5)),
        (lambda: nn.DepthwiseConv2D(3, padding=1, layout="NHWC"), (5, 5, 3)),
        (lambda: nn.BatchNormalization(axis=0), (3, 4, 4)),
        (lambda: nn.BatchNormalization(axis=-1, epsilon=1e-3), (4, 3, 2)),
        (lambda: nn.BatchNormalization(), (5,)),
        (lambda: nn.MaxPool2D(3, stride=2, padding="same"), (2, 7, 6)),
        (lambda: nn.AvgPool2D(3, stride=2, padding=1, count_include_pad=False), (2, 7, 6)),
        (lambda: nn.AvgPool2D(2, layout="NHWC"), (4, 6, 3)),
        (lambda: nn.GlobalAveragePooling2D(), (3, 4, 5)),
        (lambda: nn.GlobalAveragePooling2D(keepdims=True, layout="NHWC"), (4, 5, 3)),
        (lambda: nn.ZeroPadding2D((1, 0, 2, 1)), (2, 3, 3)),
        (lambda: nn.ZeroPadding2D(1, layout="NHWC"), (3, 3, 2)),
        (lambda: nn.ReLU6(), (3, 5)),
        (lambda: nn.Clip(-0.5, 0.7), (11,)),
        (lambda: nn.LeakyReLU(0.2), (11,)),
        (lambda: nn.HardSwish(), (3, 7)),
        (lambda: nn.Transpose((1, 2, 0)), (2, 3, 4)),
        (lambda: nn.Dropout(0.3), (6,)),
        (lambda: nn.Identity(), (6,)),
        (lambda: nn.Dense(3, use_bias=False), (5,)),
    ],
    ids=lambda v: v if isinstance(v, tuple) else None,
)
def test_single_layers_match_finite_differences(make, shape):
    """Each new layer's input and parameter gradients equal central differences."""
    g, X = one(make(), shape)
    if isinstance(g.layers[0], (nn.ReLU6, nn.Clip, nn.LeakyReLU, nn.HardSwish)):
        X = X * 4  # reach both kinks; a kink exactly at a sample has probability 0
    check_graph(g, X)


def test_merge_layers_and_constants_match_finite_differences():
    """Add, Subtract, Multiply, Divide and Concatenate, with broadcast constants, in one graph."""
    rng = np.random.default_rng(3)
    g = nn.Graph((3, 4, 4), dtype="float64")
    a = g.add(nn.Conv2D(3, 1), "input", name="a")
    b = g.add(nn.Tanh(), "input", name="b")
    s = g.add(nn.Add(), [a, b, "input"], name="sum3")
    c = g.add(nn.Constant(rng.uniform(1, 2, size=(3, 1, 1))), name="c")
    m = g.add(nn.Multiply(), [s, c, b], name="mul")
    d = g.add(nn.Divide(), [m, g.add(nn.Constant(np.float64(2.5)), name="k")], name="div")
    e = g.add(nn.Subtract(), [d, a], name="sub")
    cat = g.add(nn.Concatenate(axis=0), [e, b], name="cat")
    g.add(nn.GlobalAveragePooling2D(), cat)
    g.add(nn.Dense(2))
    check_graph(g, rng.normal(size=(3, 3, 4, 4)))


@pytest.mark.parametrize("fmod", [False, True])
def test_remainder_matches_numpy_finite_differences_and_survives_saving(fmod, tmp_path):
    """``Remainder`` is numpy's ``mod`` (or ``fmod``) of a computed dividend and divisor, with
    gradients equal to central differences, on every backend and after a save and load."""
    rng = np.random.default_rng(4)
    g = nn.Graph((2, 5), dtype="float64")
    a = g.add(nn.Dense(5), g.add(nn.Flatten()), name="a")
    b = g.add(nn.Add(), [g.add(nn.Abs(), a), g.add(nn.Constant(np.float64(0.7)))], name="b")
    g.add(nn.Remainder(fmod), [g.add(nn.Multiply(), [a, g.add(nn.Constant(3.0))]), b])
    g.add(nn.Dense(2), name="out")
    X = rng.normal(size=(6, 2, 5))
    check_graph(g, X)
    h = X.reshape(6, -1) @ g["a"].params["weight"] + g["a"].params["bias"]
    mod = np.fmod if fmod else np.mod
    want = mod(3 * h, np.abs(h) + 0.7) @ g["out"].params["weight"] + g["out"].params["bias"]
    np.testing.assert_allclose(g.predict(X), want, rtol=1e-12)
    g.save(tmp_path / "m.npz")
    back = xai.load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.predict(X), g.predict(X))
    np.testing.assert_allclose(g.predict(X, backend="gpu"), want, rtol=1e-5)
    # bf16 products move a dividend across a jump of the remainder: finite, not close
    assert np.isfinite(g.predict(X, backend="tpu")).all()


def test_exponentiate_matches_numpy_finite_differences_and_survives_saving(tmp_path):
    """``Exponentiate`` is numpy's ``power`` of a computed base and exponent, with gradients
    equal to central differences, on every backend and after a save and load."""
    rng = np.random.default_rng(5)
    g = nn.Graph((2, 5), dtype="float64")
    a = g.add(nn.Dense(5), g.add(nn.Flatten()), name="a")
    base = g.add(nn.Add(), [g.add(nn.Abs(), a), g.add(nn.Constant(np.float64(0.5)))])
    g.add(nn.Exponentiate(), [base, g.add(nn.Multiply(), [a, g.add(nn.Constant(0.5))])])
    g.add(nn.Dense(2), name="out")
    X = rng.normal(size=(6, 2, 5))
    check_graph(g, X)
    h = X.reshape(6, -1) @ g["a"].params["weight"] + g["a"].params["bias"]
    want = (np.abs(h) + 0.5) ** (0.5 * h) @ g["out"].params["weight"] + g["out"].params["bias"]
    np.testing.assert_allclose(g.predict(X), want, rtol=1e-12)
    g.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(xai.load_model(tmp_path / "m.npz").predict(X), g.predict(X))
    np.testing.assert_allclose(g.predict(X, backend="gpu"), want, rtol=1e-5)
    np.testing.assert_allclose(g.predict(X, backend="tpu"), want, rtol=0.05, atol=0.05)


def test_nhwc_layers_equal_nchw_layers_on_transposed_inputs():
    """A network in NHWC equals the same weights in NCHW on transposed images."""
    rng = np.random.default_rng(0)
    build = {}
    for layout, shape in (("NCHW", (3, 9, 8)), ("NHWC", (9, 8, 3))):
        g = nn.Graph(shape, layout=layout, dtype="float64")
        g.add(nn.Conv2D(4, 3, stride=2, padding="same", layout=layout), name="conv")
        g.add(nn.BatchNormalization(axis=0 if layout == "NCHW" else -1), name="bn")
        g.add(nn.DepthwiseConv2D(3, padding=1, layout=layout), name="dw")
        g.add(nn.MaxPool2D(2, layout=layout))
        g.add(nn.GlobalAveragePooling2D(layout=layout))
        build[layout] = g
    for node in build["NCHW"].nodes:
        for key, p in node.layer.params.items():
            value = rng.normal(size=p.shape)
            build["NCHW"].set_params(node.name, **{key: value})
            build["NHWC"].set_params(node.name, **{key: value})
    X = rng.normal(size=(4, 3, 9, 8))
    Xt = X.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(build["NHWC"].predict(Xt), build["NCHW"].predict(X), atol=1e-12)
    np.testing.assert_allclose(
        build["NHWC"].gradient(Xt, 1),
        build["NCHW"].gradient(X, 1).transpose(0, 2, 3, 1),
        atol=1e-12,
    )
    assert build["NHWC"].image_shape == (9, 8, 3) and build["NCHW"].image_shape == (3, 9, 8)


def test_same_padding_output_sizes_follow_tensorflow():
    """'same' gives ceil(size / stride) outputs with the odd pixel at the bottom and right."""
    for size, k, s in ((7, 3, 2), (8, 3, 2), (5, 4, 1), (9, 1, 3)):
        g = nn.Graph((1, size, size))
        g.add(nn.Conv2D(1, k, stride=s, padding="same"), name="c")
        assert g.shape_of("c") == (1, -(-size // s), -(-size // s))
        total = max((-(-size // s) - 1) * s + k - size, 0)
        assert g["c"].pads == (total // 2, total - total // 2) * 2 or g["c"].pads == (
            total // 2,
            total - total // 2,
            total // 2,
            total - total // 2,
        )


@pytest.mark.parametrize("backend", ["cpu", "gpu", "tpu"])
def test_every_layer_runs_and_is_counted_on_every_backend(backend):
    """A graph of every new layer predicts and back-propagates on each backend, which counts the work."""
    rng = np.random.default_rng(0)
    g = nn.Graph((3, 8, 8))
    h = g.add(nn.Conv2D(4, 3, stride=2, padding="same", use_bias=False), name="conv")
    h = g.add(nn.BatchNormalization(), h)
    h = g.add(nn.HardSwish(), h)
    d = g.add(nn.DepthwiseConv2D(3, padding=(1, 1, 1, 1)), h)
    d = g.add(nn.ReLU6(), d)
    s = g.add(nn.Add(), [h, d])
    z = g.add(nn.ZeroPadding2D(1), s)
    p = g.add(nn.AvgPool2D(2, count_include_pad=False), z)
    p = g.add(nn.LeakyReLU(), p)
    cat = g.add(nn.Concatenate(), [p, p])
    q = g.add(nn.GlobalAveragePooling2D(), cat)
    q = g.add(nn.Dropout(), q)
    g.add(nn.Dense(3), q)
    g.add(nn.Softmax())
    X = rng.normal(size=(6, 3, 8, 8)).astype(np.float32)
    runner = xai.ModelRunner(g, backend=backend)
    ref = g.predict(X)
    np.testing.assert_allclose(runner.predict(X), ref, atol=0.02)
    forward = runner.counters
    assert forward["matmuls"] == 1 + 4 + 1  # conv, 4 depthwise groups, dense
    assert forward["elementwise_ops"] > 0
    runner.reset_counters()
    grad = runner.gradient(X, np.arange(6) % 3)
    assert grad.shape == X.shape and np.all(np.isfinite(grad))
    # backward: the forward's matmuls again, plus the input gradients of conv (1), groups (4), dense (1)
    assert runner.counters["matmuls"] == 2 * forward["matmuls"]


def test_graph_construction_errors_name_the_problem():
    """Unknown inputs, taken names, wrong arity and bad shapes are errors naming the node."""
    g = nn.Graph((3, 4, 4))
    g.add(nn.ReLU(), name="r")
    with pytest.raises(xai.UnknownNameError, match="nope"):
        g.add(nn.ReLU(), "nope")
    with pytest.raises(xai.ValidationError, match="'r' is taken"):
        g.add(nn.ReLU(), name="r")
    with pytest.raises(xai.ValidationError, match="takes 2 input"):
        g.add(nn.Subtract(), ["r"])
    with pytest.raises(xai.ShapeError, match="node 'd'.*Put Flatten"):
        g.add(nn.Dense(2), "r", name="d")
    with pytest.raises(xai.ShapeError, match="do not broadcast"):
        g.add(nn.Add(), ["r", g.add(nn.Flatten())])
    with pytest.raises(xai.ShapeError, match="must have shape"):
        g.set_params(g.add(nn.Conv2D(2, 1), "r"), weight=np.zeros((3, 3, 1, 1)))
    with pytest.raises(xai.ValidationError, match="finite"):
        g.set_params("conv2d_1", bias=[np.nan, 0])
    with pytest.raises(xai.ValidationError, match="multiple of groups"):
        nn.Conv2D(3, groups=2)
    with pytest.raises(xai.ValidationError, match="layout"):
        nn.MaxPool2D(layout="NWHC")


def test_fold_batch_norm_keeps_the_function_and_removes_the_work():
    """Folding gives the same outputs and gradients, with each foldable batch norm an Identity."""
    rng = np.random.default_rng(1)
    g = nn.Graph((2, 6, 6), dtype="float64")
    g.add(nn.Conv2D(3, 3, use_bias=False), name="c")
    g.add(nn.BatchNormalization(), name="bn1")
    g.add(nn.DepthwiseConv2D(3), name="dw")
    g.add(nn.BatchNormalization(), name="bn2")
    g.add(nn.Flatten())
    g.add(nn.Dense(4), name="d")
    g.add(nn.BatchNormalization(), name="bn3")
    for name in ("bn1", "bn2", "bn3"):
        c = g[name].gamma.size
        g.set_params(
            name,
            gamma=rng.uniform(0.5, 2, c),
            beta=rng.normal(size=c),
            mean=rng.normal(size=c),
            variance=rng.uniform(0.5, 2, c),
        )
    folded = g.fold_batch_norm()
    X = rng.normal(size=(5, 2, 6, 6))
    np.testing.assert_allclose(folded.predict(X), g.predict(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(folded.gradient(X, 2), g.gradient(X, 2), rtol=1e-10, atol=1e-12)
    assert [type(folded[n]).__name__ for n in ("bn1", "bn2")] == ["Identity", "Identity"]
    assert type(folded["bn3"]).__name__ == "Identity" or folded.output == "bn3"
    assert isinstance(g["bn1"], nn.BatchNormalization)  # the original is untouched
    assert folded.folded_batch_norms == {"bn1": "c", "bn2": "dw", "bn3": "d"}
    assert g.folded_batch_norms == {}


def test_folded_batch_norms_are_saved_and_summarised(tmp_path):
    """A saved folded network still says which batch norms were merged into which layer."""
    g = nn.Graph((2, 6, 6))
    g.add(nn.Conv2D(3, 3), name="c")
    g.add(nn.BatchNormalization(), name="bn")
    g.add(nn.ReLU(), name="r")
    g.add(nn.BatchNormalization(), name="bn_after_relu")  # its input is not a convolution's
    folded = g.fold_batch_norm()
    folded.save(tmp_path / "net.npz")
    back = nn.load_model(tmp_path / "net.npz")
    assert back.folded_batch_norms == folded.folded_batch_norms == {"bn": "c"}
    assert isinstance(back["bn_after_relu"], nn.BatchNormalization)
    assert "folded into 'c'" in str(back.summary())
    X = np.random.default_rng(0).normal(size=(3, 2, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(back.predict(X), g.predict(X), rtol=1e-5, atol=1e-6)


def test_sequential_is_a_chain_graph():
    """A Sequential and the Graph of the same chain, with the same weights, agree exactly."""
    rng = np.random.default_rng(4)
    make = [
        lambda: nn.Conv2D(3, 3, padding=1),
        lambda: nn.ReLU(),
        lambda: nn.MaxPool2D(2),
        lambda: nn.Flatten(),
        lambda: nn.Dense(4),
        lambda: nn.Softmax(),
    ]
    seq = nn.Sequential([m() for m in make], input_shape=(2, 6, 6), seed=1)
    g = nn.Graph((2, 6, 6), seed=1)
    for m in make:
        g.add(m())
    assert [n.name for n in g.nodes] == [n.name for n in seq.nodes]
    X = rng.normal(size=(5, 2, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(g.predict(X), seq.predict(X))
    np.testing.assert_array_equal(g.gradient(X, 2), seq.gradient(X, 2))
    np.testing.assert_array_equal(g.activations(X, "dense_1"), seq.activations(X, "dense_1"))


def test_a_layer_of_the_older_protocol_still_runs():
    """A custom layer written with stateful forward / backward still predicts and differentiates."""

    class Square(nn.Layer):
        """``x ** 2`` in the older protocol: a cache on the layer."""

        def forward(self, x, backend, *, cache=True):
            self._x = x if cache else None
            return backend.elementwise(np.square, x)

        def backward(self, grad, backend, *, param_grads=True, input_grad=True):
            x = self._need_cache("_x")
            return backend.elementwise(lambda g, v: 2 * g * v, grad, x, ops=2)

    net = nn.Sequential([nn.Dense(3), Square(), nn.Dense(2)], input_shape=(4,), dtype="float64")
    X = np.random.default_rng(0).normal(size=(5, 4))
    check_graph(net, X)


def test_a_graph_trains_with_fit():
    """fit trains a residual graph with a batch norm: the loss falls and the two moons separate."""
    from sklearn.datasets import make_moons

    X, y = make_moons(400, noise=0.1, random_state=0)
    X = X.astype(np.float32)
    g = nn.Graph((2,), seed=0)
    h = g.add(nn.Dense(16), name="d1")
    h = g.add(nn.Tanh(), h)
    r = g.add(nn.Dense(16), h, name="d2")
    r = g.add(nn.BatchNormalization(), r, name="bn")
    r = g.add(nn.Tanh(), r)
    s = g.add(nn.Add(), [h, r])
    g.add(nn.Dense(2), s)
    g.add(nn.Softmax())
    before = {k: v.copy() for k, v in g["bn"].buffers.items()}
    g.fit(X, y, optimizer="adam", learning_rate=0.01, batch_size=32, epochs=40, progress=False)
    assert g.history["loss"].iloc[-1] < 0.5 * g.history["loss"].iloc[0]
    assert g.score(X, y) > 0.95
    assert not np.allclose(g["bn"].gamma, 1)  # the batch norm's scale is trained too
    for key, value in before.items():
        np.testing.assert_array_equal(g["bn"].buffers[key], value)  # its statistics are not
