"""New layers against PyTorch's functional ops: forward passes and autograd gradients, float64."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import xai_core as xai

torch = pytest.importorskip("torch")  # the `import` extra, which `make test` installs
F = torch.nn.functional
nn = xai.nn


def compare(g: "nn.Graph", torch_fn, X: np.ndarray, params: dict) -> None:
    """Outputs, input gradients and parameter gradients of ``g`` equal those of ``torch_fn``."""
    rng = np.random.default_rng(7)
    for (node, key), value in params.items():
        g.set_params(node, **{key: value})
    record = nn.Record()
    be = xai.get_backend("cpu", dtype="float64")
    y = g.forward(X, be, record=record)
    r = rng.normal(size=y.shape)
    gx, grads = g.vjp(r, be, record)

    tx = torch.tensor(X, requires_grad=True)
    tp = {k: torch.tensor(v, requires_grad=k[1] in g[k[0]].params) for k, v in params.items()}
    ty = torch_fn(tx, tp)
    (ty * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (node, key), t in tp.items():
        if t.requires_grad:
            np.testing.assert_allclose(grads[node][key], t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("c", "filters", "kernel", "stride", "padding", "dilation", "groups"),
    [
        (4, 6, 3, 1, 1, 1, 1),
        (4, 6, 3, 2, (1, 2, 0, 1), 1, 2),
        (3, 3, (3, 2), (2, 1), 2, 2, 3),
        (6, 4, 1, 1, 0, 1, 2),
        (2, 3, 5, 3, (2, 2, 1, 1), (1, 2), 1),
    ],
)
def test_conv2d_equals_torch_conv2d(c, filters, kernel, stride, padding, dilation, groups):
    """Grouped, strided, dilated and asymmetrically padded convolutions equal torch's, with gradients."""
    rng = np.random.default_rng(0)
    g = nn.Graph((c, 11, 10), dtype="float64")
    g.add(nn.Conv2D(filters, kernel, stride, padding, dilation, groups), name="conv")
    w = rng.normal(size=g["conv"].weight.shape)
    b = rng.normal(size=filters)
    pads = g["conv"].pads

    def fn(x, p):
        x = F.pad(x, (pads[2], pads[3], pads[0], pads[1]))
        return F.conv2d(x, p[("conv", "weight")], p[("conv", "bias")], stride, 0, dilation, groups)

    compare(g, fn, rng.normal(size=(3, c, 11, 10)), {("conv", "weight"): w, ("conv", "bias"): b})


def test_depthwise_with_multiplier_equals_torch_grouped_conv():
    """DepthwiseConv2D is torch's conv2d with groups = channels, 'same' padding included."""
    rng = np.random.default_rng(1)
    g = nn.Graph((3, 9, 9), dtype="float64")
    g.add(nn.DepthwiseConv2D(3, stride=2, padding="same", depth_multiplier=2), name="dw")
    pads = g["dw"].pads

    def fn(x, p):
        x = F.pad(x, (pads[2], pads[3], pads[0], pads[1]))
        return F.conv2d(x, p[("dw", "weight")], p[("dw", "bias")], 2, 0, 1, 3)

    params = {("dw", "weight"): rng.normal(size=(6, 1, 3, 3)), ("dw", "bias"): rng.normal(size=6)}
    compare(g, fn, rng.normal(size=(2, 3, 9, 9)), params)


def test_batch_norm_equals_torch_batch_norm_in_eval_mode():
    """Inference batch norm equals torch's batch_norm with running statistics, gradients included."""
    rng = np.random.default_rng(2)
    g = nn.Graph((4, 3, 5), dtype="float64")
    g.add(nn.BatchNormalization(epsilon=1e-3), name="bn")
    params = {
        ("bn", "gamma"): rng.uniform(0.5, 2, 4),
        ("bn", "beta"): rng.normal(size=4),
        ("bn", "mean"): rng.normal(size=4),
        ("bn", "variance"): rng.uniform(0.5, 2, 4),
    }

    def fn(x, p):
        return F.batch_norm(
            x,
            p[("bn", "mean")],
            p[("bn", "variance")],
            p[("bn", "gamma")],
            p[("bn", "beta")],
            training=False,
            eps=1e-3,
        )

    compare(g, fn, rng.normal(size=(3, 4, 3, 5)), params)


@pytest.mark.parametrize("include", [True, False])
def test_pools_and_activations_equal_torch(include):
    """Average and max pools with padding, ReLU6, LeakyReLU, HardSwish, global pooling equal torch."""
    rng = np.random.default_rng(3)
    g = nn.Graph((2, 7, 8), dtype="float64")
    a = g.add(nn.AvgPool2D(3, stride=2, padding=1, count_include_pad=include), name="avg")
    a = g.add(nn.HardSwish(), a)
    m = g.add(nn.MaxPool2D(3, stride=2, padding=1), "input", name="max")
    m = g.add(nn.LeakyReLU(0.1), m)
    s = g.add(nn.Add(), [a, m])
    s = g.add(nn.ReLU6(), s)
    g.add(nn.GlobalAveragePooling2D(), s)

    def fn(x, p):
        a = F.hardswish(F.avg_pool2d(x, 3, 2, 1, count_include_pad=include))
        m = F.leaky_relu(F.max_pool2d(x, 3, 2, 1), 0.1)
        return F.relu6(a + m).mean(dim=(2, 3))

    compare(g, fn, 3 * rng.normal(size=(3, 2, 7, 8)), {})


@settings(max_examples=25, deadline=None)
@given(
    groups=st.integers(1, 3),
    per_group=st.integers(1, 2),
    filters_per_group=st.integers(1, 2),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(*(st.integers(0, 2) for _ in range(4))),
    size=st.tuples(st.integers(4, 9), st.integers(4, 9)),
    seed=st.integers(0, 2**16),
)
def test_conv2d_geometry_property_equals_torch(
    groups, per_group, filters_per_group, kernel, stride, dilation, pads, size, seed
):
    """Random groups, kernels, strides, dilations and asymmetric pads: outputs and gradients equal torch's."""
    span = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    assume(size[0] + pads[0] + pads[1] >= span[0] and size[1] + pads[2] + pads[3] >= span[1])
    c, filters = groups * per_group, groups * filters_per_group
    rng = np.random.default_rng(seed)
    g = nn.Graph((c, *size), dtype="float64")
    g.add(nn.Conv2D(filters, kernel, stride, pads, dilation, groups), name="conv")
    params = {
        ("conv", "weight"): rng.normal(size=(filters, per_group, *kernel)),
        ("conv", "bias"): rng.normal(size=filters),
    }

    def fn(x, p):
        x = F.pad(x, (pads[2], pads[3], pads[0], pads[1]))
        return F.conv2d(x, p[("conv", "weight")], p[("conv", "bias")], stride, 0, dilation, groups)

    compare(g, fn, rng.normal(size=(2, c, *size)), params)
