"""Gradients of int8 models: the int8 forward pass, the fake-quantised float backward (straight-through).

The oracle is torch: the same fake-quantised network built from the int8 graph with torch's
own operators (``torch.fake_quantize_per_tensor_affine`` at every quantise point,
``fake_quantize_per_channel_affine`` on the weights dequantised from the int8 weights),
differentiated by torch autograd. Each quantise point's forward value is pinned to the int8
model's (``fq(y) + (int8 - fq(y)).detach()``, which leaves torch's straight-through
gradient as it is), so both walk back from identical forward quantisation points.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.backends.cpu import CPUBackend

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _same(size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _pad_window(x, op, kh, kw, value):
    """NCHW ``x`` padded as TFLite's SAME window pads it (nothing for VALID)."""
    o = op.options
    if int(o.get("Padding", 1)) != 0:
        return x
    top, bottom = _same(x.shape[2], kh, int(o.get("StrideH", 1)), int(o.get("DilationHFactor", 1)))
    left, right = _same(x.shape[3], kw, int(o.get("StrideW", 1)), int(o.get("DilationWFactor", 1)))
    return F.pad(x, (left, right, top, bottom), value=value)


def _fused(op, y):
    act = int(op.options.get("FusedActivationFunction", 0))
    return {0: y, 1: F.relu(y), 2: F.hardtanh(y, -1.0, 1.0), 3: F.relu6(y)}[act]


def _weights(t):
    """Weights dequantised by torch from the int8 weights (per channel along the quantised axis)."""
    w = torch.from_numpy(t.data.astype(np.float64))
    if len(t.scale) == 1:
        return w * float(t.scale[0])
    w = w * torch.from_numpy(t.scale.astype(np.float64)).reshape(
        [-1 if d == t.quantized_dimension else 1 for d in range(w.ndim)]
    )
    scale = torch.from_numpy(t.scale.astype(np.float32))
    zp = torch.zeros(len(t.scale), dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(w, scale, zp, t.quantized_dimension, -127, 127)


def _bias(t):
    return torch.from_numpy(t.data.astype(np.float64) * t.scale.astype(np.float64))


def _nchw(x):
    return x.permute(0, 3, 1, 2)


def _nhwc(x):
    return x.permute(0, 2, 3, 1)


def _torch_op(op, tensors, args):  # noqa: C901 - one branch per operator
    """One TFLite operator in torch's float64 operators (NHWC tensors, as TFLite's)."""
    kind, o = op.kind, op.options
    x = args[0]
    if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w_t = tensors[op.inputs[1]]
        w = _weights(w_t)
        stride = (int(o.get("StrideH", 1)), int(o.get("StrideW", 1)))
        dil = (int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1)))
        if kind == "CONV_2D":
            w = w.permute(0, 3, 1, 2)  # (oc, ic, kh, kw)
            groups = x.shape[-1] // w.shape[1]
        else:
            w = w.permute(3, 0, 1, 2)  # (oc, 1, kh, kw)
            groups = x.shape[-1]
        b = _bias(tensors[op.inputs[2]]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        xp = _pad_window(_nchw(x), op, w.shape[2], w.shape[3], 0.0)
        y = F.conv2d(xp, w, b, stride=stride, dilation=dil, groups=groups)
        return _fused(op, _nhwc(y))
    if kind == "FULLY_CONNECTED":
        w = _weights(tensors[op.inputs[1]])
        b = _bias(tensors[op.inputs[2]]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        return _fused(op, F.linear(x.reshape(-1, w.shape[1]), w, b))
    if kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
        kh, kw = int(o["FilterHeight"]), int(o["FilterWidth"])
        stride = (int(o.get("StrideH", 1)), int(o.get("StrideW", 1)))
        if kind == "MAX_POOL_2D":
            y = F.max_pool2d(_pad_window(_nchw(x), op, kh, kw, -np.inf), (kh, kw), stride)
        else:
            sums = F.avg_pool2d(_pad_window(_nchw(x), op, kh, kw, 0.0), (kh, kw), stride, divisor_override=1)  # fmt: skip
            ones = _pad_window(torch.ones_like(_nchw(x[:1, ..., :1])), op, kh, kw, 0.0)
            y = sums / F.avg_pool2d(ones, (kh, kw), stride, divisor_override=1)
        return _fused(op, _nhwc(y))
    if kind in ("ADD", "SUB", "MUL"):
        a, b = args
        fn = {"ADD": torch.add, "SUB": torch.sub, "MUL": torch.mul}[kind]
        return _fused(op, fn(a, b))
    if kind == "MEAN":
        axes = [int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data)]
        return x.mean(dim=axes, keepdim=bool(o.get("KeepDims")))
    if kind == "PAD":
        widths = tensors[op.inputs[1]].data.astype(np.int64)
        flat = [int(v) for pair in widths[::-1] for v in pair]
        return F.pad(x, flat)
    if kind in ("QUANTIZE", "DEQUANTIZE"):
        return x
    if kind in ("RESHAPE", "SQUEEZE"):
        return x.reshape(len(x), *tensors[op.outputs[0]].shape[1:])
    if kind == "TRANSPOSE":
        return x.permute(*[int(a) for a in np.ravel(tensors[op.inputs[1]].data)])
    if kind == "CONCATENATION":
        return _fused(op, torch.cat(args, dim=int(o.get("Axis", 0)) % x.ndim))
    unary = {
        "TANH": torch.tanh,
        "LOGISTIC": torch.sigmoid,
        "RELU": F.relu,
        "RELU6": F.relu6,
        "HARD_SWISH": F.hardswish,
        "SOFTMAX": lambda v: torch.softmax(v * float(np.float32(o.get("Beta", 1.0))), dim=-1),
    }
    if kind in unary:
        return unary[kind](x)
    raise NotImplementedError(kind)


def _constant(t):
    """A constant operand: dequantised (a per-tensor operand of ADD, MUL...), else as stored."""
    if t.scale is None or len(t.scale) != 1:
        return None  # weights, biases, shapes: read from the tensors by the operator
    return float(t.scale[0]) * (torch.from_numpy(t.data.astype(np.float64)) - int(t.zero_point[0]))


def _fake_quant(y, t, pinned):
    """torch's fake quantisation of ``y`` to ``t``, its forward value pinned to the int8 model's."""
    zp = int(t.zero_point[0])
    info = np.iinfo(t.dtype)
    fq = torch.fake_quantize_per_tensor_affine(y, float(t.scale[0]), zp, info.min, info.max)
    real = float(t.scale[0]) * (torch.from_numpy(pinned.astype(np.float64)) - zp)
    return fq + (real.reshape(fq.shape) - fq).detach(), fq.detach()


def torch_straight_through(q, X, target):
    """d output[target] / d X of the fake-quantised network in torch, and the largest
    distance in steps between torch's fake-quantised values and the int8 model's."""
    graph = q.graph
    tensors = graph.tensors
    ints = q.run(q.quantize_input(X))
    x = torch.tensor(X.astype(np.float64), requires_grad=True)
    inp = tensors[graph.inputs[0]]
    values = {inp.index: x}
    if inp.scale is not None and inp.dtype.kind in "iu":
        values[inp.index], fq = _fake_quant(x.reshape(ints[inp.index].shape), inp, ints[inp.index])
    off = 0.0
    for op in graph.operators:
        args = [values[i] if i in values else _constant(tensors[i]) for i in op.inputs if i >= 0]
        y = _torch_op(op, tensors, args)
        out = tensors[op.outputs[0]]
        if out.scale is None or out.dtype.kind == "f":  # a float tensor: no quantise step
            values[out.index] = y
            continue
        values[out.index], fq = _fake_quant(y, out, ints[out.index])
        off = max(off, float((fq - values[out.index].detach()).abs().max()) / float(out.scale[0]))
    logits = values[q.output_tensor.index].reshape(len(X), -1)
    logits[torch.arange(len(X)), torch.from_numpy(target)].sum().backward()
    return x.grad.numpy(), off


def _cnn(seed=0):
    return nn.Sequential(
        [
            nn.Conv2D(6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.DepthwiseConv2D(3, padding=1),
            nn.ReLU6(),
            nn.Conv2D(8, 3, stride=2, padding=1),
            nn.AvgPool2D(2),
            nn.Flatten(),
            nn.Dense(12),
            nn.Tanh(),
            nn.Dense(5),
        ],
        input_shape=(2, 12, 12),
        seed=seed,
    )


def _images(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n, 2, 12, 12)).astype(np.float32)


@pytest.fixture(scope="module")
def cnn():
    X = _images(40)
    return xai.quantize(_cnn(), X[:32], progress=False), X[32:]


def test_a_quantised_cnn_has_straight_through_gradients_equal_to_torchs(cnn):
    """Input gradients of a quantised CNN equal torch autograd's through the same fake-quantised network."""
    q, X = cnn
    assert {"gradient", "straight_through"} <= q.capabilities
    target = np.arange(len(X)) % 5
    ours = q.gradient(X, target, backend=CPUBackend(dtype="float64"))
    want, off = torch_straight_through(q, X, target)
    assert off < 1.001  # torch's fake quantisation and LiteRT's integers: one step at most
    assert ours.shape == X.shape and np.abs(want).max() > 0
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_the_input_quantisation_stops_gradients_outside_its_range(cnn):
    """A feature beyond the input's clamping range gets no gradient, as torch's fake-quant STE gives."""
    q, X = cnn
    t = q.graph.tensors[q.graph.inputs[0]]
    top = float(t.scale[0]) * (127 - int(t.zero_point[0]))
    far = X.copy()
    far[:, 0, 0, :] = top + 10 * float(t.scale[0])
    g = q.gradient(far, 0, backend=CPUBackend(dtype="float64"))
    assert np.all(g[:, 0, 0, :] == 0)
    want, _ = torch_straight_through(q, far, np.zeros(len(far), np.int64))
    np.testing.assert_allclose(g, want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_the_forward_pass_stays_int8_and_the_backward_runs_on_the_edge_tpus_host(cnn):
    """On edgetpu the predictions are the int8 ones; the gradient's float products are counted on its host."""
    q, X = cnn
    runner = xai.ModelRunner(q, backend="edgetpu")
    assert "gradient" in runner.capabilities
    np.testing.assert_array_equal(runner.predict(X), q.predict(X))
    runner.reset_counters()
    g = runner.gradient(X, 1)
    c = runner.counters
    assert c["edgetpu_operators"] > 0 and c["host_macs"] > 0
    want = q.gradient(X, 1, backend=CPUBackend(dtype="float64"))
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_ig_on_the_edge_tpu_records_the_estimator_and_its_completeness(cnn):
    """IG on edgetpu: meta names the straight-through gradients; the delta is against the int8 outputs."""
    q, X = cnn
    e = xai.explain(q, X, method="ig", backend="edgetpu", target=2, steps=64)
    assert e.meta["gradient"] == "straight-through (fake-quantised float backward)"
    f_x = q.predict(X)[:, 2]
    f_b = q.predict(np.zeros_like(X))[:, 2]
    sums = e.values.reshape(len(X), -1).sum(axis=1)
    np.testing.assert_allclose(e.meta["convergence_delta"], sums - (f_x - f_b), atol=1e-5)
    assert np.all(np.isfinite(e.meta["convergence_delta"]))
    float_e = xai.explain(q.source, X, method="ig", target=2, steps=64)
    assert "gradient" not in float_e.meta


def test_compare_backends_runs_ig_on_the_edge_tpu(cnn):
    """compare_backends(method="ig") includes edgetpu, noting the straight-through gradients."""
    q, X = cnn
    result = xai.compare_backends(
        q.source, X[:3], method="ig", backends=["cpu", "edgetpu"], quantized=q, steps=16
    )
    assert "edgetpu" in result.explanations and "edgetpu" not in result.skipped
    assert result.notes["edgetpu"] == "straight-through (fake-quantised float backward)"
    assert "cpu" not in result.notes


def test_black_boxes_and_models_without_a_backward_rule_are_refused_up_front(cnn):
    """A black box, and an int8 model with an operator without a backward rule, get no gradients on edgetpu."""
    q, X = cnn
    box = xai.as_model(lambda v: v.reshape(len(v), -1)[:, :3], input_shape=X.shape[1:])
    with pytest.raises(xai.CapabilityError, match="gradient"):
        xai.explain(box, X, method="ig", backend="edgetpu")
    net = nn.Sequential(
        [
            nn.Dense(6),
            nn.Reshape((2, 3)),
            nn.layers.Reduce("max", (1,), keepdims=False),
            nn.Dense(2),
        ],
        input_shape=(4,),
        seed=0,
    )
    rows = np.random.default_rng(1).normal(size=(16, 4))
    odd = xai.quantize(net, rows, progress=False)
    assert "REDUCE_MAX" in odd.operators and "gradient" not in odd.capabilities
    with pytest.raises(xai.CapabilityError, match=r"REDUCE_MAX \(operator \d+\)"):
        odd.gradient(rows, 0)
    with pytest.raises(xai.CapabilityError, match="gradient"):
        xai.explain(odd, rows, method="ig", backend="edgetpu")
    result = xai.compare_backends(
        net, rows[:2], method="ig", backends=["cpu", "edgetpu"], quantized=odd, steps=8
    )
    assert "REDUCE_MAX" in result.skipped["edgetpu"]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
INT8_FILES = [
    "cnn_int8",
    "cnn_int8_uint8_io",
    "elementwise_int8",
    "mlp_int8",
    "mlp_int8_float_io",
    "separable_int8",
]


@pytest.mark.parametrize("name", INT8_FILES, ids=INT8_FILES)
def test_int8_tflite_files_have_torchs_straight_through_gradients(name):
    """Files TensorFlow's converter wrote (uint8 and float input and output too) have torch's STE gradients."""
    m = xai.from_tflite(FIXTURES / f"{name}.tflite")
    assert {"gradient", "straight_through"} <= m.capabilities
    X = np.random.default_rng(0).uniform(0, 1, (3, *m.input_shape)).astype(np.float32)
    target = np.arange(3) % m.n_outputs
    ours = m.gradient(X, target, backend=CPUBackend(dtype="float64"))
    want, _ = torch_straight_through(m, X, target)
    assert np.abs(want).max() > 0
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_a_float_tflite_file_still_has_no_gradients():
    """A float .tflite model has no gradients here: gradient methods are refused up front."""
    m = xai.from_tflite(FIXTURES / "mlp_float.tflite")
    assert "gradient" not in m.capabilities
    with pytest.raises(xai.CapabilityError, match="float .tflite"):
        m.gradient(np.zeros((1, 20), np.float32), 0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_zoo_models_at_64_px_have_torchs_straight_through_gradients(name):
    """torchvision's mobilenet_v2 and resnet18 (random weights), quantised: torch's STE input gradients."""
    from xai_core.importers.zoo.torchvision_models import build

    pytest.importorskip("torchvision", reason="the zoo extra is not installed")
    module = build(name)
    X = np.random.default_rng(0).standard_normal((10, 3, 64, 64)).astype(np.float32)
    net = xai.from_torch(module, torch.from_numpy(X[:1]))
    q = xai.quantize(net, X[:8], progress=False)
    assert {"gradient", "straight_through"} <= q.capabilities
    target = np.array([0, 3])
    ours = q.gradient(X[8:], target, backend=CPUBackend(dtype="float64"))
    want, off = torch_straight_through(q, X[8:], target)
    assert off < 1.001 and np.abs(want).max() > 0
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-10 * np.abs(want).max())


@pytest.mark.parametrize("adj", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_backward_equals_torch_with_broadcast_and_adjoints(adj):
    """BATCH_MATMUL's backward rule (AdjX / AdjY, leading axes broadcast) equals torch autograd."""
    import types

    import torch

    from xai_core.int8.kernels_float_vjp import batch_matmul

    rng = np.random.default_rng(0)
    adj_x, adj_y = adj
    a = rng.normal(size=(2, 1, 4, 3) if not adj_x else (2, 1, 3, 4))
    b = rng.normal(size=(5, 3, 6) if not adj_y else (5, 6, 3))
    g = rng.normal(size=(2, 5, 4, 6))
    op = types.SimpleNamespace(options={"AdjX": adj_x, "AdjY": adj_y})
    da, db = batch_matmul(op, None, [a, b], None, g, xai.get_backend("cpu", dtype="float64"))
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    out = (ta.transpose(-1, -2) if adj_x else ta) @ (tb.transpose(-1, -2) if adj_y else tb)
    out.backward(torch.tensor(g))
    np.testing.assert_allclose(da, ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-12)
