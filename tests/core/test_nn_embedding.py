"""Embedding: lookup, gradients and import, against torch."""

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.errors import ValidationError


def _layer_and_torch(vocab=20, dim=5, seed=0):
    emb = torch.nn.Embedding(vocab, dim).double()
    layer = xai.nn.Embedding(vocab, dim)
    layer.build((6,), np.random.default_rng(seed), np.float64)
    layer.set_params(weight=emb.weight.detach().numpy())
    return layer, emb


def test_forward_is_the_lookup_torch_does():
    """The output is the table's rows at the ids."""
    layer, emb = _layer_and_torch()
    ids = np.random.default_rng(1).integers(0, 20, (4, 6))
    be = xai.get_backend("cpu", dtype="float64")
    got = layer.apply(ids.astype(np.float64), be, None)
    np.testing.assert_array_equal(got, emb(torch.tensor(ids)).detach().numpy())


def test_weight_gradient_equals_torch_and_ids_have_none():
    """Repeated ids add their gradients; the input gradient is zero."""
    layer, emb = _layer_and_torch()
    ids = np.array([[1, 1, 2, 3, 1, 0], [4, 4, 4, 5, 6, 7]])
    be = xai.get_backend("cpu", dtype="float64")
    record = {}
    layer.apply(ids.astype(np.float64), be, record)
    g = np.random.default_rng(2).normal(size=(2, 6, 5))
    gx, grads = layer.vjp(g, be, record)
    out = emb(torch.tensor(ids))
    out.backward(torch.tensor(g))
    np.testing.assert_allclose(grads["weight"], emb.weight.grad.numpy(), atol=1e-12)
    assert gx.shape == (2, 6) and not gx.any()


@pytest.mark.parametrize(
    "ids, words",
    [
        (np.array([[0.5, 1, 2, 3, 4, 5]]), "whole token ids"),
        (np.array([[0, 1, 2, 3, 4, 20]]), r"\[0, 20\)"),
        (np.array([[-1, 1, 2, 3, 4, 5]]), r"\[0, 20\)"),
    ],
    ids=["fraction", "past-vocabulary", "negative"],
)
def test_bad_ids_are_refused(ids, words):
    """A fractional or out-of-range id is a ValidationError naming the rule."""
    layer, _ = _layer_and_torch()
    with pytest.raises(ValidationError, match=words):
        layer.apply(ids, xai.get_backend("cpu"), None)


def test_float_ids_are_refused_at_the_boundary():
    """check_token_ids refuses a dtype that is not integer or float."""
    from xai_core.nn.embedding import check_token_ids

    with pytest.raises(ValidationError, match="integer token ids"):
        check_token_ids(np.array(["a"]), 5)


def test_torch_embedding_imports_as_one_layer():
    """nn.Embedding exports as Gather of a table by the ids; it imports as Embedding."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Embedding(50, 8), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(48, 3)
    ).eval()
    ids = torch.randint(0, 50, (4, 6))
    net = xai.from_torch(module, ids)
    assert any(isinstance(n.layer, xai.nn.Embedding) for n in net.nodes)
    other = torch.randint(0, 50, (5, 6))
    want = module(other).detach().numpy()
    np.testing.assert_allclose(net.predict(other.numpy()), want, atol=1e-5)


def test_save_and_load_keep_the_table(tmp_path):
    """An embedding network survives save/load."""
    net = xai.nn.Sequential(
        [xai.nn.Embedding(10, 4), xai.nn.Flatten(), xai.nn.Dense(2)], input_shape=(3,)
    )
    ids = np.array([[1, 2, 3], [9, 0, 5]])
    net.save(tmp_path / "m.npz")
    again = xai.load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(again.predict(ids), net.predict(ids))
