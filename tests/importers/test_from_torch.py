"""Whole PyTorch networks imported: onnxruntime, torch.autograd and Captum are the oracles."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.importers.torch_import import export_onnx

from .conftest import TORCH_MODELS, ort_run, randomize_batchnorm


def _inputs(shape, n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize(
    "export_fold, import_fold",
    [(False, False), (False, True), (True, True)],
    ids=["batchnorm-nodes", "batchnorm-folded-at-import", "batchnorm-folded-by-exporter"],
)
def test_probabilities_match_onnxruntime(torch_model, export_fold, import_fold):
    """100 random inputs: max abs difference <= 1e-5 on probabilities, fp32 on cpu."""
    name, module, shape = torch_model
    data = export_onnx(module, torch.zeros(2, *shape), fold=export_fold)
    net = xai.from_onnx(data, fold_batch_norm=import_fold)
    if name != "mlp":
        kinds = {type(n.layer).__name__ for n in net.nodes}
        assert ("BatchNormalization" in kinds) is not (export_fold or import_fold)
        assert bool(net.folded_batch_norms) is (import_fold and not export_fold)
    X = _inputs(shape, 100)
    want = ort_run(data, X)
    got = net.predict(X)
    assert got.shape == want.shape == (100, net.n_outputs)
    assert np.abs(got - want).max() <= 1e-5


def test_from_torch_keeps_shape_and_layout(torch_model):
    """The input shape is the module's sample shape; images are NCHW with an image_shape."""
    name, module, shape = torch_model
    net = xai.from_torch(
        module,
        torch.zeros(2, *shape),
        output_names=[f"c{i}" for i in range(module(torch.zeros(1, *shape)).shape[1])],
    )
    assert net.input_shape == shape
    assert net.output_names[0] == "c0"
    if len(shape) == 3:
        assert net.layout == "NCHW"
        assert net.image_shape == (shape[1:] if shape[0] == 1 else shape)


def test_gradients_match_autograd(torch_model):
    """d prob[target] / d x equals torch.autograd's, relative difference <= 1e-4."""
    name, module, shape = torch_model
    net = xai.from_torch(module, torch.zeros(2, *shape))
    X = _inputs(shape, 8, seed=2)
    target = np.arange(8) % net.n_outputs
    x = torch.from_numpy(X).requires_grad_(True)
    out = module(x)
    out[torch.arange(8), torch.from_numpy(target)].sum().backward()
    want = x.grad.numpy()
    got = net.gradient(X, target)
    rel = np.abs(got - want).max() / np.abs(want).max()
    assert rel <= 1e-4


def test_ig_matches_captum_on_the_original():
    """IG on the imported CNN equals Captum's IntegratedGradients at the same Gauss-Legendre nodes."""
    from captum.attr import IntegratedGradients

    torch.manual_seed(0)
    make, shape = TORCH_MODELS["resnet"]
    module = randomize_batchnorm(make())
    net = xai.from_torch(module, torch.zeros(2, *shape))
    X = _inputs(shape, 3, seed=3)
    target = np.array([0, 3, 7])
    e = xai.explain(
        net, X, method="ig", target=target, steps=16, integration="gausslegendre", progress=False
    )
    want = (
        IntegratedGradients(module)
        .attribute(
            torch.from_numpy(X), target=torch.from_numpy(target), n_steps=16, method="gausslegendre"
        )
        .detach()
        .numpy()
    )
    rel = np.abs(e.values - want).max() / np.abs(want).max()
    assert rel <= 1e-4


@pytest.mark.parametrize("name", ["resnet", "mobilenetv2"], ids=["resnet", "mobilenetv2"])
def test_runs_on_gpu_and_tpu_with_agreement(name):
    """compare_backends runs the imported network on gpu and tpu; both agree with the cpu."""
    torch.manual_seed(0)
    make, shape = TORCH_MODELS[name]
    net = xai.from_torch(randomize_batchnorm(make()), torch.zeros(2, *shape))
    X = _inputs(shape, 2, seed=4)
    c = xai.compare_backends(
        net, X, method="ig", backends=("cpu", "gpu", "tpu"), steps=8, progress=False
    )
    assert set(c.explanations) == {"cpu", "gpu", "tpu"}
    rows = c.rows.set_index("backend")
    assert (rows.loc["gpu", "cosine"] > 0.9999).all()
    assert (rows.loc["tpu", "cosine"] > 0.9).all()  # bf16 multiplies move it a little, not away
    assert not rows.loc["gpu", "flipped"].any()


def test_unsupported_module_names_the_operator():
    """A module exporting an operator outside the list fails naming it, before any work."""

    class Det(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.det(x).unsqueeze(1)

    with pytest.raises(xai.CapabilityError, match=r"'Det'.*Supported operators: .*Conv"):
        xai.from_torch(Det(), torch.zeros(2, 3, 3))


def test_weights_over_protobufs_limit_go_through_a_deleted_directory(monkeypatch, tmp_path):
    """Weights over the 2 GiB an in-memory ONNX model may hold are exported into a temporary
    directory (shared ones counted once), imported from it equal to torch, and deleted."""
    import tempfile

    from xai_core.importers import torch_import

    torch.manual_seed(0)
    shared = torch.nn.Linear(64, 64)
    module = torch.nn.Sequential(shared, torch.nn.ReLU(), shared)  # 64 * 65 floats, twice
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    exports = []
    trace = torch_import._trace

    def spy(*args):
        data, notes, want = trace(*args)
        exports.append(data)
        return data, notes, want

    monkeypatch.setattr(torch_import, "_trace", spy)
    X = torch.from_numpy(_inputs((64,), 16))
    monkeypatch.setattr(torch_import, "ONNX_LIMIT_BYTES", 64 * 65 * 4)
    xai.from_torch(module, X[:2])
    assert isinstance(exports[-1], bytes)  # held in memory: at the limit, not over it
    monkeypatch.setattr(torch_import, "ONNX_LIMIT_BYTES", 64 * 65 * 4 - 1)
    net = xai.from_torch(module, X[:2])
    path = exports[-1]
    assert path.name == "model.onnx" and path.parent.parent == tmp_path
    assert not path.exists() and list(tmp_path.iterdir()) == []
    with torch.no_grad():
        want = module(X).numpy()
    np.testing.assert_allclose(net.predict(X.numpy()), want, rtol=1e-5, atol=1e-6)


class _Large(torch.nn.Module):
    """2.1 GiB of weights, of which the forward pass reads a few."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(2**29 + 2**25))  # 2.125 GiB of float32
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x) + self.table[:3]


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("XAI_ZOO_ALL"),
    reason="writes and reads 2.1 GiB (about 6 GB of memory): XAI_ZOO_ALL=1 runs it",
)
def test_a_module_over_2_gib_imports_through_external_data(monkeypatch, tmp_path):
    """Over protobuf's 2 GiB: the exporter writes external data files, read back equal to torch."""
    import tempfile

    from xai_core.importers import torch_import

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = []
    trace = torch_import._trace

    def spy(*args):
        out = trace(*args)
        seen.append(sorted(p.name for p in out[0].parent.iterdir()))
        return out

    monkeypatch.setattr(torch_import, "_trace", spy)
    torch.manual_seed(0)
    module = _Large()
    with torch.no_grad():
        module.table[:3] = torch.tensor([1.0, -2.0, 3.0])
    X = torch.from_numpy(_inputs((4,), 8))
    net = xai.from_torch(module, X[:2])
    assert "table" in seen[0] and "model.onnx" in seen[0]  # the weight in a file of its own
    assert list(tmp_path.iterdir()) == []
    with torch.no_grad():
        want = module(X).numpy()
    np.testing.assert_allclose(net.predict(X.numpy()), want, rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_named():
    """Not a module, not a batch: clear errors naming the argument."""
    with pytest.raises(xai.ValidationError, match="module must be a torch.nn.Module"):
        xai.from_torch(lambda x: x, torch.zeros(2, 3))
    with pytest.raises(xai.ValidationError, match="example_input"):
        xai.from_torch(torch.nn.Linear(3, 2), [1, 2, 3])
