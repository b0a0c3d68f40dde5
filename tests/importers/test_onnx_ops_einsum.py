"""ONNX ``Einsum``: values against onnxruntime, gradients against torch autograd, on random
shapes; the equations it refuses are refused naming the equation; Einsum of constants folds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import helper

import xai_core as xai
from xai_core.errors import CapabilityError
from xai_core.importers.onnx_ops_einsum import parse_equation

from .conftest import one_node_model, ort_run

RNG = np.random.default_rng(0)


def _sizes(n: int) -> list[int]:
    return [int(d) for d in RNG.integers(2, 5, n)]


def _transposed(perm: list[int]):
    """Sigmoid(x transposed by ``perm``): an operand unlike x (no symmetric products)."""
    return [
        helper.make_node("Transpose", ["x"], ["t"], perm=perm),
        helper.make_node("Sigmoid", ["t"], ["z"]),
    ]


SIGMOID = [helper.make_node("Sigmoid", ["x"], ["z"])]

#: name -> (equation, per-sample shape of x, the nodes making the second operand z from x
#: or None, a constant second operand's shape or None, z from x in torch)
CASES = {
    # attention's products, as torch exports them
    "scores": ("bhid,bhjd->bhij", _sizes(3), SIGMOID, None, torch.sigmoid),
    "mix": ("bhij,bhjd->bhid", _sizes(3), _transposed([0, 1, 3, 2]), None, None),
    # MaxViT's, with spaces and capitals
    "maxvit_scores": ("B G H I D, B G H J D -> B G H I J", _sizes(4), SIGMOID, None, torch.sigmoid),
    "maxvit_mix": (
        "B G H I J, B G H J D -> B G H I D",
        _sizes(4),
        _transposed([0, 1, 2, 4, 3]),
        None,
        None,
    ),
    # two contracted and two free indices; an output order that needs a transpose
    "grouped": ("bijk,bjkl->bli", _sizes(3), _transposed([0, 2, 3, 1]), None, None),
    "outer": ("bi,bj->bji", _sizes(1), SIGMOID, None, torch.sigmoid),
    # with a constant operand, second or first
    "linear": ("bij,jk->bik", _sizes(2), None, "jk", None),
    "constant_first": ("kj,bij->bki", _sizes(2), None, "kj", None),
    # one operand: a permutation, a sum, both; an index summed in one operand of two
    "permute": ("bijk->bkij", _sizes(3), None, None, None),
    "sum": ("bij->bi", _sizes(2), None, None, None),
    "sum_permute": ("bijk->bki", _sizes(3), None, None, None),
    "summed_then_product": ("bij,bjk->bj", _sizes(2), _transposed([0, 2, 1]), None, None),
    # diagonals and traces; ellipses (the batch axis within one), explicit and implicit
    "diagonal": ("bii->bi", [4, 4], None, None, None),
    "trace": ("bijj->bi", [2, 3, 3], None, None, None),
    "diagonal_of_three": ("bjjj,bjkl->blk", [3, 3, 3], _transposed([0, 2, 1, 3]), None, None),
    "ellipsis_diagonal": ("...ii ->...i", [2, 3, 3], None, None, None),
    "ellipsis_product": (
        "...ij,...jk->...ik",
        _sizes(3),
        _transposed([0, 1, 3, 2]),
        None,
        None,
    ),
    "ellipsis_implicit": ("...ji", _sizes(2), None, None, None),
}


def _model(case: str) -> tuple[bytes, tuple[int, ...], np.ndarray | None]:
    eq, shape, make_z, const, _ = CASES[case]
    operands = [s.strip() for s in eq.replace(" ", "").split("->")[0].split(",")]
    inits, nodes, inputs = {}, [], ["x"]
    if const is not None:  # the constant's indices: those of x where shared, else 3
        x_letters = next(o for o in operands if o != const)[1:]
        sizes = dict(zip(x_letters, shape))
        value = RNG.standard_normal([sizes.get(c, 3) for c in const]).astype(np.float32)
        inits = {"w": value}
        inputs = ["w", "x"] if operands[0] == const else ["x", "w"]
    elif make_z is not None:
        nodes, inputs = make_z, ["x", "z"]
    data = one_node_model(
        "Einsum", {"equation": eq}, shape=tuple(shape), inputs=inputs, inits=inits, nodes=nodes
    )
    return data, tuple(shape), inits.get("w")


def _torch(case: str, x: torch.Tensor, w: np.ndarray | None) -> torch.Tensor:
    eq, _, make_z, const, z_of = CASES[case]
    if const is not None:
        wt = torch.as_tensor(w, dtype=x.dtype)
        first = eq.replace(" ", "").split(",")[0] == const
        return torch.einsum(eq, wt, x) if first else torch.einsum(eq, x, wt)
    if make_z is None:
        return torch.einsum(eq, x)
    z = z_of(x) if z_of is not None else torch.sigmoid(x.permute(*make_z[0].attribute[0].ints))
    return torch.einsum(eq, x, z)


def _batch(shape, n=3):
    return RNG.standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_values_match_onnxruntime(case):
    """The imported network's output equals onnxruntime's within 1e-5 relative, in float32."""
    data, shape, _ = _model(case)
    X = _batch(shape)
    want = ort_run(data, X)
    net = xai.from_onnx(data)
    got = net.predict(X)
    assert got.shape == want.reshape(len(X), -1).shape
    np.testing.assert_allclose(
        got, want.reshape(len(X), -1), rtol=1e-5, atol=1e-6 * np.abs(want).max()
    )


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_gradients_match_torch_autograd(case):
    """``ModelRunner.gradient`` equals torch autograd of ``torch.einsum`` (float64 oracle)."""
    data, shape, w = _model(case)
    X = _batch(shape, n=4)
    net = xai.from_onnx(data, dtype="float64")
    n_out = net.predict(X[:1]).shape[1]
    target = RNG.integers(0, n_out, len(X))
    got = xai.ModelRunner(net).gradient(X, target)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    out = _torch(case, x, w).reshape(len(X), -1)
    assert out.shape[1] == n_out
    out[torch.arange(len(X)), torch.as_tensor(target)].sum().backward()
    want = x.grad.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * (np.abs(want).max() + 1e-30))


def test_products_are_batched_matmuls_on_the_tpu():
    """Attention's product runs as one MatMul layer, counted as one GEMM per head and sample."""
    data, shape, _ = _model("scores")
    net = xai.from_onnx(data)
    assert [type(layer).__name__ for layer in net.layers].count("MatMul") == 1
    runner = xai.ModelRunner(net, backend="tpu")
    runner.predict(_batch(shape, n=3))
    assert runner.counters["matmuls"] == 3 * shape[0]


@pytest.mark.parametrize(
    ("equation", "shape", "words"),
    [
        ("bi->bii", (3,), "repeated in the output"),
        ("bb->b", (3,), "repeated"),
        ("bij->ji", (3, 4), "batch"),
        ("ij->ji", (3,), "batch"),
        ("bij->b", (3, 4), "scalar"),
    ],
    ids=["output_diagonal", "batch_diagonal", "batch_moved", "transpose_of_batch", "scalar"],
)
def test_unsupported_equations_are_refused_naming_them(equation, shape, words):
    """An index repeated in the output or on the batch axis, a moved batch axis, a
    per-sample scalar: a CapabilityError naming the equation."""
    data = one_node_model("Einsum", {"equation": equation}, shape=shape)
    with pytest.raises(CapabilityError, match=words) as err:
        xai.from_onnx(data)
    assert repr(equation) in str(err.value)


def test_a_repeated_index_of_two_sizes_is_a_format_error():
    """``bii`` over a (3, 4) sample: no diagonal; the sizes named, before anything is built."""
    from xai_core.errors import ModelFormatError

    data = one_node_model("Einsum", {"equation": "bii->bi"}, shape=(3, 4))
    with pytest.raises(
        ModelFormatError, match=r"index 'i', repeated in one operand, has sizes \[3, 4\]"
    ):
        xai.from_onnx(data)


def test_three_operands_are_refused():
    """More than two operands: refused, the equation named."""
    eq = "bi,bi,bi->bi"
    data = one_node_model("Einsum", {"equation": eq}, inputs=["x", "x", "x"])
    with pytest.raises(CapabilityError, match="more than two operands"):
        xai.from_onnx(data)


def test_einsum_of_constants_is_folded():
    """An Einsum of two constants is computed at import: no product in the network."""
    a, c = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    fold = helper.make_node("Einsum", ["a", "c"], ["p"], equation="ij,jk->ik")
    data = one_node_model(
        "Add",
        shape=(3, 5),
        inputs=["x", "p"],
        inits={"a": a.astype(np.float32), "c": c.astype(np.float32)},
        nodes=[fold],
    )
    net = xai.from_onnx(data)
    assert "MatMul" not in [type(layer).__name__ for layer in net.layers]
    X = _batch((3, 5))
    np.testing.assert_allclose(
        net.predict(X), ort_run(data, X).reshape(3, -1), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    ("equation", "want"),
    [
        ("bhid,bhjd->bhij", (["bhid", "bhjd"], "bhij")),
        ("B G H I D, B G H J D -> B G H I J", (["BGHID", "BGHJD"], "BGHIJ")),
        ("ij,jk", (["ij", "jk"], "ik")),
        ("...ii->...i", None),
        ("i1->i", None),
    ],
)
def test_parse_equation(equation, want):
    """Spaces ignored; the implicit output sorted; an ellipsis without ranks or a digit: None."""
    assert parse_equation(equation) == want


@pytest.mark.parametrize(
    ("equation", "ranks", "want"),
    [
        ("...ii ->...i", [4], (["abii"], "abi")),
        ("...ij,...jk->...ik", [4, 3], (["abij", "bjk"], "abik")),
        ("...j,jk", [3, 2], (["abj", "jk"], "abk")),
        ("b...,b...->b", [2, 2], (["ba", "ba"], "b")),
        ("...ij", [1], None),
    ],
)
def test_parse_equation_expands_ellipses_aligned_from_the_right(equation, ranks, want):
    """An ellipsis takes unused letters, as many as the rank leaves; fewer take the last."""
    assert parse_equation(equation, ranks) == want
