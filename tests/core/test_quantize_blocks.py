"""xai.quantize on grouped convolutions (RegNet, ResNeXt) and batch norms after a concatenation (DenseNet).

Each block is a torch module built here, imported with xai.from_torch, quantised, written with
xai.to_tflite and run by LiteRT's reference kernels (the oracle for every integer), and on the
edgetpu backend, whose operator placement follows the Edge TPU compiler's rules.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import xai_core as xai
from xai_core.testing import litert_reference_outputs

torch = pytest.importorskip("torch")
litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)
tnn = torch.nn

#: Largest |int8 - float| over the float outputs' peak |value| on random inputs (measured: 0.3%
#: for the dense block, 1.0% and 1.1% for the grouped ones; a wrong scale, layout or group
#: order gives errors of the order of the outputs themselves).
TOLERANCE = 0.05


def _randomise_batch_norms(module: tnn.Module, seed: int) -> tnn.Module:
    """Trained-looking batch-norm statistics, so that no batch norm is the identity."""
    g = torch.Generator().manual_seed(seed)
    for bn in module.modules():
        if isinstance(bn, tnn.BatchNorm2d):
            c = bn.num_features
            bn.running_mean.copy_(torch.rand(c, generator=g) * 0.4 - 0.2)
            bn.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            bn.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            bn.bias.data.copy_(torch.rand(c, generator=g) * 0.4 - 0.2)
    return module.eval()


def _conv_bn(cin, cout, k, stride=1, groups=1) -> list[tnn.Module]:
    return [
        tnn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        tnn.BatchNorm2d(cout),
    ]


class ResNeXtBlock(tnn.Module):
    """A ResNeXt bottleneck: 1x1, a 3x3 of cardinality 4, 1x1, and the identity shortcut."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = tnn.Sequential(*_conv_bn(3, 16, 3), tnn.ReLU())
        self.body = tnn.Sequential(
            *_conv_bn(16, 16, 1), tnn.ReLU(), *_conv_bn(16, 16, 3, groups=4), tnn.ReLU(),
            *_conv_bn(16, 16, 1),
        )  # fmt: skip
        self.head = tnn.Linear(16, 5)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.body(x))
        return self.head(x.mean((2, 3)))


class RegNetBlock(tnn.Module):
    """A RegNetX stage: a strided 3x3 of group width 8 and a projected shortcut, then another block."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = tnn.Sequential(*_conv_bn(3, 16, 3, stride=2), tnn.ReLU())
        self.a = tnn.Sequential(
            *_conv_bn(16, 24, 1), tnn.ReLU(), *_conv_bn(24, 24, 3, stride=2, groups=3), tnn.ReLU(),
            *_conv_bn(24, 24, 1),
        )  # fmt: skip
        self.proj = tnn.Sequential(*_conv_bn(16, 24, 1, stride=2))
        self.b = tnn.Sequential(
            *_conv_bn(24, 24, 1), tnn.ReLU(), *_conv_bn(24, 24, 3, groups=3), tnn.ReLU(),
            *_conv_bn(24, 24, 1),
        )  # fmt: skip
        self.head = tnn.Linear(24, 5)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(self.proj(x) + self.a(x))
        x = torch.relu(x + self.b(x))
        return self.head(x.mean((2, 3)))


class DenseBlock(tnn.Module):
    """A DenseNet block of two layers (BN, ReLU, 1x1, BN, ReLU, 3x3 on the concatenation), a transition, BN."""

    def __init__(self, growth: int = 4) -> None:
        super().__init__()
        self.stem = tnn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.layers = tnn.ModuleList(
            tnn.Sequential(
                tnn.BatchNorm2d(c), tnn.ReLU(), tnn.Conv2d(c, 2 * growth, 1, bias=False),
                tnn.BatchNorm2d(2 * growth), tnn.ReLU(),
                tnn.Conv2d(2 * growth, growth, 3, padding=1, bias=False),
            )
            for c in (8, 8 + growth)
        )  # fmt: skip
        c = 8 + 2 * growth
        self.transition = tnn.Sequential(
            tnn.BatchNorm2d(c), tnn.ReLU(), tnn.Conv2d(c, c // 2, 1, bias=False), tnn.AvgPool2d(2)
        )
        self.norm = tnn.BatchNorm2d(c // 2)
        self.head = tnn.Linear(c // 2, 5)

    def forward(self, x):
        x = self.stem(x)
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        x = torch.relu(self.norm(self.transition(x)))
        return self.head(x.mean((2, 3)))


BLOCKS = {"resnext": ResNeXtBlock, "regnet": RegNetBlock, "densenet": DenseBlock}


@functools.cache
def _quantised(name: str, n: int = 300):
    """The block's torch module, its import, the quantised model, inputs and torch's outputs (cached)."""
    torch.manual_seed(0)
    module = _randomise_batch_norms(BLOCKS[name](), seed=1)
    X = np.random.default_rng(2).uniform(0, 1, (n, 3, 16, 16)).astype(np.float32)
    net = xai.from_torch(module, torch.from_numpy(X[:1]))
    with torch.no_grad():
        expected = module(torch.from_numpy(X)).numpy()
    return module, net, xai.quantize(net, X[:200], progress=False), X, expected


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BLOCKS))
def test_quantised_block_runs_in_litert_bit_identically_and_tracks_torch(name, tmp_path):
    """LiteRT's reference kernels give the same integers on 300 inputs; outputs within 5% of torch's; float file too."""
    _, net, q, X, expected = _quantised(name)
    path = xai.to_tflite(q, tmp_path / f"{name}.tflite")
    Q = q.quantize_input(X)
    ours = q.run(Q)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(-1), litert_reference_outputs(path, Q).reshape(-1))
    error = np.abs(q.predict(X) - expected).max() / np.abs(expected).max()
    assert error < TOLERANCE, f"{name}: int8 differs from float by {error:.1%} of the peak output"
    # the float network written as it is: the same operators in float32, torch's outputs
    float_path = xai.to_tflite(net, tmp_path / f"{name}_float.tflite")
    got = litert_reference_outputs(float_path, X[:20]).reshape(20, -1)
    np.testing.assert_allclose(got, expected[:20], atol=1e-5)


def test_grouped_convolutions_are_grouped_conv_2d_operators():
    """Cardinality 4 is one CONV_2D whose filters take 16 / 4 channels, as TFLite's converter writes it."""
    _, _, q, _, _ = _quantised("resnext")
    g = q.graph
    filters = [g.tensors[op.inputs[1]].shape for op in g.operators if op.op == "CONV_2D"]
    inputs = [g.tensors[op.inputs[0]].shape[-1] for op in g.operators if op.op == "CONV_2D"]
    assert (16, 3, 3, 4) in filters
    assert sum(f[-1] != c for f, c in zip(filters, inputs)) == 1


def test_residual_additions_fuse_their_relu():
    """The ReLU after a residual ADD is its fused activation, as TFLite's converter writes it."""
    _, _, q, _, _ = _quantised("regnet")
    adds = [op for op in q.graph.operators if op.op == "ADD"]
    assert len(adds) == 2 and all(op.options["FusedActivationFunction"] == 1 for op in adds)


@pytest.mark.parametrize("backend", ["cpu", "gpu", "tpu"])
def test_grouped_blocks_give_the_same_integers_on_every_backend(backend):
    """The grouped products in exact float slices on cpu, gpu and tpu: edgetpu's integers."""
    _, _, q, X, _ = _quantised("resnext")
    Q = q.quantize_input(X[:16])
    reference = q.run(Q, xai.ModelRunner(q, backend="edgetpu").backend)[q.graph.outputs[0]]
    ours = q.run(Q, xai.get_backend(backend))[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours, reference)


def test_a_file_whose_filters_do_not_divide_the_channels_is_refused(tmp_path):
    """A CONV_2D whose filters take 5 of 16 channels is refused on reading, naming the operator."""
    import dataclasses

    _, _, q, _, _ = _quantised("resnext")
    g = q.graph
    k = next(i for i, op in enumerate(g.operators) if op.op == "CONV_2D"
             and g.tensors[op.inputs[1]].shape == (16, 3, 3, 4))  # fmt: skip
    w = g.tensors[g.operators[k].inputs[1]]
    bad = dataclasses.replace(w, shape=(16, 3, 3, 5), data=np.zeros((16, 3, 3, 5), np.int8))
    tensors = list(g.tensors)
    tensors[w.index] = bad
    from xai_core.importers.tflite.writer import write_tflite

    path = write_tflite(dataclasses.replace(g, tensors=tuple(tensors)), tmp_path / "bad.tflite")
    with pytest.raises(xai.ModelFormatError, match=rf"operator {k} \(CONV_2D\).*grouped CONV_2D"):
        xai.from_tflite(path)


def test_batch_norms_after_a_concatenation_become_mul_and_add():
    """The batch norms nothing folds into are a MUL and an ADD by per-channel constants, the ReLU after each fused."""
    _, net, q, _, _ = _quantised("densenet")
    g = q.graph
    ops = q.operators
    assert (
        ops.count("MUL") == ops.count("ADD") == 4
    )  # two on concatenations, one on the stem, one on the pool
    for op in (op for op in g.operators if op.op in ("MUL", "ADD")):
        const = g.tensors[op.inputs[1]]
        channels = g.tensors[op.inputs[0]].shape[-1]
        assert const.dtype == np.int8 and const.shape == (1, 1, 1, channels)
        assert len(const.scale) == 1  # TFLite's int8 MUL and ADD take per-tensor quantisation
    adds = [op for op in g.operators if op.op == "ADD"]
    assert [op.options["FusedActivationFunction"] for op in adds] == [1, 1, 1, 1]  # ReLUs fused
    assert "RELU" not in ops


@pytest.mark.parametrize("name", list(BLOCKS))
def test_quantised_block_on_the_edge_tpu(name):
    """edgetpu gives the cpu's integers; its operator counts follow the placement (a grouped CONV_2D stays on the host)."""
    _, _, q, X, _ = _quantised(name)
    runner = xai.ModelRunner(q, backend="edgetpu")
    np.testing.assert_array_equal(runner.predict(X[:20]), q.predict(X[:20]))
    placement = q.placement()
    on_host = [p for p in placement if p.device == "host"]
    counters = runner.counters
    assert counters["edgetpu_operators"] == len(placement) - len(on_host)
    assert counters["host_operators"] == len(on_host)
    grouped = [
        p
        for p in placement
        if p.op == "CONV_2D"
        and q.graph.tensors[q.graph.operators[p.index].inputs[1]].shape[-1]
        != q.graph.tensors[q.graph.operators[p.index].inputs[0]].shape[-1]
    ]
    if name == "densenet":
        assert not on_host and not grouped
    else:
        first = grouped[0]
        assert first.device == "host" and "grouped CONV_2D" in first.reason
        assert on_host[0].index == first.index  # everything before it runs on the Edge TPU
        assert counters["macs"] > 0 and counters["host_macs"] > 0


def _native(kind: str) -> xai.nn.Graph:
    """Native networks with a batch norm on the input, and grouped NHWC convolutions."""
    nn = xai.nn
    if kind == "mlp-bn-on-input":
        g = nn.Graph(input_shape=(10,), input_name="x", seed=0)
        g.add(nn.BatchNormalization(), "x", name="bn")
        g.add(nn.Dense(8), name="d1")
        g.add(nn.ReLU(), name="r")
        g.add(nn.Dense(3), name="d2")
        c = 10
    else:
        g = nn.Graph(input_shape=(8, 8, 6), input_name="image", layout="NHWC", seed=0)
        a = g.add(nn.Conv2D(6, 3, padding="same", groups=3, layout="NHWC"), "image", name="g1")
        b = g.add(nn.Conv2D(4, 3, stride=1, dilation=2, padding="same", groups=2, layout="NHWC"), "image", name="g2")  # fmt: skip
        h = g.add(nn.Concatenate(axis=-1), [a, b], name="cat")
        h = g.add(nn.BatchNormalization(axis=-1), h, name="bn")
        h = g.add(nn.ReLU6(), h, name="r")
        g.add(nn.GlobalAveragePooling2D(layout="NHWC"), h, name="gap")
        g.add(nn.Dense(3), name="d")
        c = 10
    rng = np.random.default_rng(3)
    g.set_params("bn", gamma=rng.uniform(0.5, 1.5, c), beta=rng.normal(0, 0.3, c))
    g.set_params("bn", mean=rng.normal(0, 0.3, c), variance=rng.uniform(0.5, 1.5, c))
    return g


@pytest.mark.parametrize("kind", ["mlp-bn-on-input", "nhwc-grouped-dilated"])
def test_native_networks_with_unfolded_batch_norms_and_groups(kind, tmp_path):
    """A batch norm on the input, grouped dilated NHWC convolutions: LiteRT's integers, near float."""
    net = _native(kind)
    X = np.random.default_rng(4).uniform(-1, 1, (200, *net.input_shape)).astype(np.float32)
    q = xai.quantize(net, X, progress=False)
    assert "MUL" in q.operators and "ADD" in q.operators
    path = xai.to_tflite(q, tmp_path / f"{kind}.tflite")
    Q = q.quantize_input(X)
    ours = q.run(Q)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(-1), litert_reference_outputs(path, Q).reshape(-1))
    expected = net.predict(X)
    error = np.abs(q.predict(X) - expected).max() / np.abs(expected).max()
    assert error < TOLERANCE, f"{kind}: {error:.1%}"
