"""Sequence layers against PyTorch autograd: Conv1D, 1-D pools, LSTM and GRU, values and gradients."""

import numpy as np
import pytest

import xai_core as xai

torch = pytest.importorskip("torch")
F = torch.nn.functional
nn = xai.nn

TOL = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6)}


def compare(g, torch_fn, X, params, dtype="float64"):
    """Outputs, input gradients and parameter gradients of ``g`` equal ``torch_fn``'s."""
    rtol, atol = TOL[dtype]
    rng = np.random.default_rng(7)
    for (node, key), value in params.items():
        g.set_params(node, **{key: value})
    record = nn.Record()
    be = xai.get_backend("cpu", dtype=dtype)
    X = X.astype(dtype)
    y = g.forward(X, be, record=record)
    r = rng.normal(size=y.shape).astype(dtype)
    gx, grads = g.vjp(r, be, record)
    tdt = torch.float64 if dtype == "float64" else torch.float32
    tx = torch.tensor(X, requires_grad=True, dtype=tdt)
    tp = {
        k: torch.tensor(v, dtype=tdt, requires_grad=k[1] in g[k[0]].params)
        for k, v in params.items()
    }
    ty = torch_fn(tx, tp)
    (ty * torch.tensor(r, dtype=tdt)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=rtol, atol=atol)
    for (node, key), t in tp.items():
        if t.requires_grad:
            np.testing.assert_allclose(grads[node][key], t.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("c", "filters", "kernel", "stride", "padding", "dilation", "groups", "layout"),
    [
        (3, 5, 3, 1, 1, 1, 1, "NCW"),
        (4, 6, 3, 2, (2, 1), 1, 2, "NCW"),
        (2, 4, 5, 1, "same", 2, 1, "NWC"),
        (3, 3, 3, 1, "causal", 2, 3, "NWC"),
        (4, 2, 1, 3, 0, 1, 1, "NCW"),
    ],
    ids=["plain", "grouped-strided", "same-dilated-nwc", "causal-depthwise", "pointwise"],
)
def test_conv1d_equals_torch(c, filters, kernel, stride, padding, dilation, groups, layout, dtype):
    """Conv1D equals torch's conv1d for strides, dilations, groups, paddings and both layouts."""
    rng = np.random.default_rng(0)
    t = 13
    shape = (c, t) if layout == "NCW" else (t, c)
    g = nn.Graph(shape, dtype=dtype)
    g.add(nn.Conv1D(filters, kernel, stride, padding, dilation, groups, layout=layout), name="c")
    left, right = g["c"].pads

    def fn(x, p):
        x = x if layout == "NCW" else x.transpose(1, 2)
        y = F.conv1d(
            F.pad(x, (left, right)),
            p[("c", "weight")],
            p[("c", "bias")],
            stride,
            0,
            dilation,
            groups,
        )
        return y if layout == "NCW" else y.transpose(1, 2)

    params = {
        ("c", "weight"): rng.normal(size=g["c"].weight.shape),
        ("c", "bias"): rng.normal(size=filters),
    }
    compare(g, fn, rng.normal(size=(3, *shape)), params, dtype)


@pytest.mark.parametrize(
    ("kind", "pool", "stride", "padding", "ceil", "layout"),
    [
        ("max", 2, None, 0, False, "NCW"),
        ("max", 3, 2, 1, True, "NWC"),
        ("avg", 3, 2, 1, False, "NCW"),
        ("avg", 4, 3, (2, 1), True, "NWC"),
    ],
    ids=["max", "max-ceil-nwc", "avg-padded", "avg-ceil-nwc"],
)
def test_pool1d_equals_torch(kind, pool, stride, padding, ceil, layout):
    """MaxPool1D and AvgPool1D equal torch's max_pool1d and avg_pool1d, with their gradients."""
    rng = np.random.default_rng(1)
    t, c = 12, 3
    shape = (c, t) if layout == "NCW" else (t, c)
    g = nn.Graph(shape, dtype="float64")
    cls = nn.MaxPool1D if kind == "max" else nn.AvgPool1D
    g.add(cls(pool, stride, padding, layout=layout, ceil_mode=ceil), name="p")
    left, right = (
        g["p"].pads if not ceil else (padding, padding) if isinstance(padding, int) else padding
    )

    def fn(x, p):
        x = x if layout == "NCW" else x.transpose(1, 2)
        pad = left if isinstance(padding, int) or left == right else None
        if pad is None:  # asymmetric: pad by hand (zeros count, as PyTorch's default)
            x, pad = F.pad(x, (left, right)), 0
        if kind == "max":
            y = F.max_pool1d(x, pool, stride or pool, pad, ceil_mode=ceil)
        else:
            y = F.avg_pool1d(x, pool, stride or pool, pad, ceil_mode=ceil)
        return y if layout == "NCW" else y.transpose(1, 2)

    compare(g, fn, rng.normal(size=(2, *shape)), {})


@pytest.mark.parametrize("layout", ["NCW", "NWC"])
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_global_pool1d_equals_torch(kind, layout):
    """The global pools over time equal torch's mean and amax over the steps."""
    rng = np.random.default_rng(2)
    shape = (4, 9) if layout == "NCW" else (9, 4)
    g = nn.Graph(shape, dtype="float64")
    cls = nn.GlobalAveragePooling1D if kind == "avg" else nn.GlobalMaxPooling1D
    g.add(cls(layout=layout), name="p")
    axis = 2 if layout == "NCW" else 1
    fn = (lambda x, p: x.mean(axis)) if kind == "avg" else (lambda x, p: x.amax(axis))
    compare(g, fn, rng.normal(size=(3, *shape)), {})


def _torch_rnn(kind, features, hidden, bidirectional, dtype, linear_before_reset=True):
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    return cls(features, hidden, batch_first=True, bidirectional=bidirectional).to(
        torch.float64 if dtype == "float64" else torch.float32
    )


def onnx_weights(module, kind, bidirectional):
    """A torch LSTM / GRU's weights in ONNX's layouts and gate orders (W, R, B)."""
    h = module.hidden_size
    order = [0, 3, 1, 2] if kind == "lstm" else [1, 0, 2]  # torch ifgo -> iofc; rzn -> zrh

    def gates(a):
        return np.concatenate([a[k * h : (k + 1) * h] for k in order])

    ws, rs, bs = [], [], []
    for suffix in ["", "_reverse"][: 1 + bidirectional]:
        p = {n: v.detach().numpy() for n, v in module.named_parameters()}
        ws.append(gates(p[f"weight_ih_l0{suffix}"]))
        rs.append(gates(p[f"weight_hh_l0{suffix}"]))
        bs.append(
            np.concatenate([gates(p[f"bias_ih_l0{suffix}"]), gates(p[f"bias_hh_l0{suffix}"])])
        )
    return np.stack(ws), np.stack(rs), np.stack(bs)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("kind", "bidirectional", "output"),
    [
        ("lstm", False, "sequence"),
        ("lstm", True, "sequence"),
        ("lstm", True, "hidden"),
        ("lstm", False, "cell"),
        ("gru", False, "sequence"),
        ("gru", True, "sequence"),
        ("gru", True, "hidden"),
    ],
    ids=lambda v: str(v),
)
def test_recurrent_equals_torch(kind, bidirectional, output, dtype):
    """LSTM and GRU (linear_before_reset, as torch's) equal torch's, with weight gradients."""
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    n, t, features, hidden = 3, 6, 4, 5
    module = _torch_rnn(kind, features, hidden, bidirectional, dtype)
    direction = "bidirectional" if bidirectional else "forward"
    layer = (
        nn.LSTM(hidden, direction, output)
        if kind == "lstm"
        else nn.GRU(hidden, direction, output, linear_before_reset=True)
    )
    g = nn.Graph((t, features), dtype=dtype)
    g.add(layer, name="rnn")
    w, r, b = onnx_weights(module, kind, bidirectional)
    d = 2 if bidirectional else 1

    def fn(x, p):
        y, state = module(x)
        if output == "sequence":
            return y.reshape(x.shape[0], t, d, hidden)
        if kind == "lstm":
            state = state[0] if output == "hidden" else state[1]
        return state.transpose(0, 1)

    params = {("rnn", "weight"): w, ("rnn", "recurrent_weight"): r, ("rnn", "bias"): b}
    # torch's own parameters carry the gradients; compare them through the ONNX layout
    rtol, atol = TOL[dtype]
    for (node, key), value in params.items():
        g.set_params(node, **{key: value})
    be = xai.get_backend("cpu", dtype=dtype)
    X = rng.normal(size=(n, t, features)).astype(dtype)
    record = nn.Record()
    y = g.forward(X, be, record=record)
    cot = rng.normal(size=y.shape).astype(dtype)
    gx, grads = g.vjp(cot, be, record)
    tx = torch.tensor(X, requires_grad=True)
    ty = fn(tx, None)
    (ty * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=rtol, atol=atol)
    gw, gr, gb = _grads_as_onnx(module, kind, bidirectional)
    np.testing.assert_allclose(grads["rnn"]["weight"], gw, rtol=rtol, atol=atol)
    np.testing.assert_allclose(grads["rnn"]["recurrent_weight"], gr, rtol=rtol, atol=atol)
    np.testing.assert_allclose(grads["rnn"]["bias"], gb, rtol=rtol, atol=atol)


def _grads_as_onnx(module, kind, bidirectional):
    saved = {n: p.data.clone() for n, p in module.named_parameters()}
    for _, p in module.named_parameters():
        p.data = p.grad.clone()
    out = onnx_weights(module, kind, bidirectional)
    for n, p in module.named_parameters():
        p.data = saved[n]
    return out


def _gru_reference(x, w, r, b, lbr):
    """ONNX's GRU equations, written out in torch for autograd (one direction)."""
    k = r.shape[1]
    wb, rb = b[: 3 * k], b[3 * k :]
    h = torch.zeros(x.shape[0], k, dtype=x.dtype)
    ys = []
    for t in range(x.shape[1]):
        xp = x[:, t] @ w.T + wb
        z = torch.sigmoid(xp[:, :k] + h @ r[:k].T + rb[:k])
        rr = torch.sigmoid(xp[:, k : 2 * k] + h @ r[k : 2 * k].T + rb[k : 2 * k])
        if lbr:
            n = torch.tanh(xp[:, 2 * k :] + rr * (h @ r[2 * k :].T + rb[2 * k :]))
        else:
            n = torch.tanh(xp[:, 2 * k :] + (rr * h) @ r[2 * k :].T + rb[2 * k :])
        h = (1 - z) * n + z * h
        ys.append(h)
    return torch.stack(ys, 1)


@pytest.mark.parametrize("lbr", [False, True], ids=["onnx-default", "linear-before-reset"])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_gru_both_reset_forms_equal_torch_autograd(lbr, direction):
    """GRU with either reset form, forward or reverse, equals ONNX's equations under torch autograd."""
    rng = np.random.default_rng(4)
    n, t, features, k = 2, 5, 3, 4
    g = nn.Graph((t, features), dtype="float64")
    g.add(nn.GRU(k, direction, linear_before_reset=lbr), name="gru")
    params = {
        ("gru", "weight"): rng.normal(size=(1, 3 * k, features)),
        ("gru", "recurrent_weight"): rng.normal(size=(1, 3 * k, k)),
        ("gru", "bias"): rng.normal(size=(1, 6 * k)),
    }

    def fn(x, p):
        xs = x.flip(1) if direction == "reverse" else x
        y = _gru_reference(
            xs,
            p[("gru", "weight")][0],
            p[("gru", "recurrent_weight")][0],
            p[("gru", "bias")][0],
            lbr,
        )
        y = y.flip(1) if direction == "reverse" else y
        return y[:, :, None]

    compare(g, fn, rng.normal(size=(n, t, features)), params)


def _lstm_peephole_reference(x, w, r, b, p, c0):
    """ONNX's LSTM equations with peepholes (gates i, o, f, c; P = [Pi, Po, Pf]), in torch."""
    k = r.shape[1]
    pi, po, pf = p[:k], p[k : 2 * k], p[2 * k :]
    h = torch.zeros(x.shape[0], k, dtype=x.dtype)
    c = c0.expand(x.shape[0], k)
    ys = []
    for t in range(x.shape[1]):
        g = x[:, t] @ w.T + h @ r.T + b[: 4 * k] + b[4 * k :]
        i = torch.sigmoid(g[:, :k] + pi * c)
        f = torch.sigmoid(g[:, 2 * k : 3 * k] + pf * c)
        c = f * c + i * torch.tanh(g[:, 3 * k :])
        o = torch.sigmoid(g[:, k : 2 * k] + po * c)
        h = o * torch.tanh(c)
        ys.append(h)
    return torch.stack(ys, 1), c


@pytest.mark.parametrize("output", ["sequence", "hidden", "cell"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_peepholes_equal_onnx_equations_under_torch_autograd(direction, output):
    """An LSTM with peepholes (i, f read the last cell, o the new one) and non-zero initial
    cells, each direction and output: values, input gradients and every parameter's
    gradient, P's included."""
    rng = np.random.default_rng(9)
    n, t, features, k = 3, 5, 3, 4
    d = 2 if direction == "bidirectional" else 1
    g = nn.Graph((t, features), dtype="float64")
    g.add(nn.LSTM(k, direction, output, peepholes=True), name="lstm")
    c0 = rng.normal(size=(d, k))
    g.set_params("lstm", initial_c=c0)
    keys = ("weight", "recurrent_weight", "bias", "peephole")
    params = {
        ("lstm", "weight"): rng.normal(size=(d, 4 * k, features)),
        ("lstm", "recurrent_weight"): rng.normal(size=(d, 4 * k, k)) * 0.5,
        ("lstm", "bias"): rng.normal(size=(d, 8 * k)),
        ("lstm", "peephole"): rng.normal(size=(d, 3 * k)),
    }

    def fn(x, p):
        outs = []
        for j in range(d):
            back = direction == "reverse" or j == 1
            xs = x.flip(1) if back else x
            ys, c = _lstm_peephole_reference(
                xs, *(p[("lstm", key)][j] for key in keys), torch.tensor(c0[j])
            )
            if output == "sequence":
                outs.append(ys.flip(1) if back else ys)
            else:
                outs.append(ys[:, -1] if output == "hidden" else c)
        return torch.stack(outs, 2 if output == "sequence" else 1)

    compare(g, fn, rng.normal(size=(n, t, features)), params)


def test_lstm_peepholes_save_load_and_run_on_every_backend(tmp_path):
    """Peepholes are saved and loaded (weights + JSON) and run on gpu and tpu as on cpu."""
    net = nn.Sequential(
        [nn.LSTM(4, peepholes=True, output="hidden"), nn.Flatten()], input_shape=(6, 3), seed=1
    )
    X = np.random.default_rng(2).normal(size=(5, 6, 3)).astype("float32")
    ref = xai.ModelRunner(net, "cpu").predict(X)
    net.save(tmp_path / "lstm.npz")
    np.testing.assert_array_equal(
        xai.ModelRunner(xai.load_model(tmp_path / "lstm.npz"), "cpu").predict(X), ref
    )
    for name in ("gpu", "tpu"):
        np.testing.assert_allclose(
            xai.ModelRunner(net, name).predict(X), ref, atol=5e-2 if name == "tpu" else 1e-5
        )


def test_lstm_initial_states_and_reverse_equal_torch():
    """Buffers initial_h / initial_c start the recurrence, as torch's (h0, c0) do."""
    torch.manual_seed(1)
    rng = np.random.default_rng(5)
    module = _torch_rnn("lstm", 3, 4, True, "float64")
    g = nn.Graph((5, 3), dtype="float64")
    g.add(nn.LSTM(4, "bidirectional"), name="lstm")
    w, r, b = onnx_weights(module, "lstm", True)
    h0, c0 = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    g.set_params("lstm", weight=w, recurrent_weight=r, bias=b, initial_h=h0, initial_c=c0)
    X = rng.normal(size=(3, 5, 3))
    y = g.forward(X, xai.get_backend("cpu", dtype="float64"))
    th0 = torch.tensor(np.repeat(h0[:, None], 3, 1))
    tc0 = torch.tensor(np.repeat(c0[:, None], 3, 1))
    ty, _ = module(torch.tensor(X), (th0, tc0))
    np.testing.assert_allclose(y, ty.detach().numpy().reshape(3, 5, 2, 4), rtol=1e-10, atol=1e-12)


def test_sequence_layers_run_and_count_on_every_backend():
    """A Conv1D + LSTM network predicts on cpu, gpu and tpu; tpu's bf16 products stay close."""
    rng = np.random.default_rng(6)
    net = nn.Sequential(
        [
            nn.Conv1D(4, 3, padding="same", layout="NWC"),
            nn.ReLU(),
            nn.LSTM(5, output="hidden"),
            nn.Flatten(),
            nn.Dense(2),
        ],
        input_shape=(8, 3),
        seed=0,
    )
    X = rng.normal(size=(4, 8, 3)).astype("float32")
    ref = xai.ModelRunner(net, "cpu").predict(X)
    for name in ("gpu", "tpu"):
        runner = xai.ModelRunner(net, name)
        out = runner.predict(X)
        np.testing.assert_allclose(out, ref, atol=5e-2 if name == "tpu" else 1e-5)
        assert runner.counters["macs"] > 0


def test_save_and_load_keep_sequence_layers(tmp_path):
    """A network of every sequence layer saves and loads with identical outputs."""
    rng = np.random.default_rng(8)
    net = nn.Sequential(
        [
            nn.Conv1D(4, 3, layout="NWC"),
            nn.MaxPool1D(2, layout="NWC"),
            nn.GRU(3, "bidirectional"),
            nn.Reshape((4, 6)),
            nn.GlobalMaxPooling1D(layout="NWC"),
            nn.Dense(2),
        ],
        input_shape=(10, 2),
        seed=0,
    )
    net.save(tmp_path / "m.npz")
    back = xai.load_model(tmp_path / "m.npz")
    X = rng.normal(size=(3, 10, 2)).astype("float32")
    np.testing.assert_array_equal(back.predict(X), net.predict(X))


@pytest.mark.parametrize(
    ("make", "shape", "words"),
    [
        (lambda: nn.LSTM(3), (4, 5, 6), "(steps, features)"),
        (lambda: nn.Conv1D(2, 3), (5,), "(channels, steps)"),
        (lambda: nn.Conv1D(2, 9), (2, 5), "does not fit"),
    ],
    ids=["lstm-rank", "conv-rank", "conv-too-short"],
)
def test_wrong_shapes_are_refused_with_the_expected_shape(make, shape, words):
    """A series of the wrong rank or too short is a ShapeError naming what was expected."""
    with pytest.raises(xai.ShapeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        nn.Sequential([make()], input_shape=shape)


def test_unknown_direction_lists_the_known_ones():
    """An unknown direction is a ValidationError naming the three."""
    with pytest.raises(xai.ValidationError, match="bidirectional"):
        nn.GRU(3, direction="backwards")


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes_of_every_sequence_layer_equal_torch(seed):
    """Random batch, steps, widths and directions: LSTM, GRU and Conv1D equal torch (float64)."""
    rng = np.random.default_rng(100 + seed)
    n, t, f, h = (int(v) for v in rng.integers([1, 1, 1, 1], [5, 9, 6, 7]))
    bidirectional = bool(rng.integers(2))
    kind = ["lstm", "gru"][seed % 2]
    torch.manual_seed(seed)
    module = _torch_rnn(kind, f, h, bidirectional, "float64")
    direction = "bidirectional" if bidirectional else "forward"
    layer = (
        nn.LSTM(h, direction) if kind == "lstm" else nn.GRU(h, direction, linear_before_reset=True)
    )
    g = nn.Graph((t, f), dtype="float64")
    g.add(layer, name="rnn")
    w, r, b = onnx_weights(module, kind, bidirectional)
    g.set_params("rnn", weight=w, recurrent_weight=r, bias=b)
    be = xai.get_backend("cpu", dtype="float64")
    X = rng.normal(size=(n, t, f))
    record = nn.Record()
    y = g.forward(X, be, record=record)
    cot = rng.normal(size=y.shape)
    gx, grads = g.vjp(cot, be, record)
    tx = torch.tensor(X, requires_grad=True)
    ty = module(tx)[0].reshape(n, t, 2 if bidirectional else 1, h)
    (ty * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for got, want in zip(
        (grads["rnn"][k] for k in ("weight", "recurrent_weight", "bias")),
        _grads_as_onnx(module, kind, bidirectional),
    ):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # a Conv1D of random geometry on the same rows, channels last
    k = int(rng.integers(1, t + 1))
    conv = nn.Graph((t, f), dtype="float64")
    conv.add(nn.Conv1D(3, k, int(rng.integers(1, 3)), "same", layout="NWC"), name="c")
    left, right = conv["c"].pads
    stride = conv["c"].stride
    params = {("c", "weight"): rng.normal(size=(3, f, k)), ("c", "bias"): rng.normal(size=3)}

    def fn(x, p):
        x = F.pad(x.transpose(1, 2), (left, right))
        return F.conv1d(x, p[("c", "weight")], p[("c", "bias")], stride).transpose(1, 2)

    compare(conv, fn, X, params)
