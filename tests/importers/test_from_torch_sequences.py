"""PyTorch sequence classifiers (Conv1d, pools, LSTM, GRU) through from_torch, and their IG against Captum."""

import numpy as np
import pytest

import xai_core as xai

torch = pytest.importorskip("torch")
tnn = torch.nn
# torch's own RNN shape checks (rnn.py) warn under the tracer; the import checks a second batch
pytestmark = pytest.mark.filterwarnings("ignore:the tracer warned")


class ConvRecurrent(tnn.Module):
    """Conv1d, ReLU, MaxPool1d, then an LSTM or GRU over the steps, its last output classified."""

    def __init__(self, kind="lstm", bidirectional=True, batch_first=True, classes=4):
        super().__init__()
        self.batch_first = batch_first
        self.conv = tnn.Conv1d(3, 8, 5, padding=2)
        self.pool = tnn.MaxPool1d(2)
        rnn = tnn.LSTM if kind == "lstm" else tnn.GRU
        self.rnn = rnn(8, 6, batch_first=batch_first, bidirectional=bidirectional)
        self.fc = tnn.Linear(6 * (2 if bidirectional else 1), classes)

    def forward(self, x):  # (n, 3, steps)
        z = self.pool(torch.relu(self.conv(x))).transpose(1, 2)
        if not self.batch_first:
            z = z.transpose(0, 1)
        y, _ = self.rnn(z)
        return self.fc(y[:, -1] if self.batch_first else y[-1])


class RecurrentFirst(tnn.Module):
    """A GRU reading (n, steps, features) directly, its final state classified after avg pooling."""

    def __init__(self):
        super().__init__()
        self.gru = tnn.GRU(2, 5, batch_first=True)
        self.pool = tnn.AvgPool1d(3, 1, 1)
        self.fc = tnn.Linear(5, 3)

    def forward(self, x):
        y, h = self.gru(x)
        pooled = self.pool(y.transpose(1, 2)).mean(2)
        return self.fc(pooled + h[0])


def series(shape, n, seed):
    return np.random.default_rng(seed).normal(size=(n, *shape)).astype(np.float32)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"batch_first": False}, {"kind": "gru"}, {"bidirectional": False, "kind": "gru"}],
    ids=["lstm-bidirectional", "lstm-time-major", "gru-bidirectional", "gru-forward"],
)
def test_conv_recurrent_classifier_equals_torch(kwargs):
    """A Conv1d + LSTM / GRU classifier imports and predicts what torch computes, gradients too."""
    torch.manual_seed(0)
    module = ConvRecurrent(**kwargs).eval()
    net = xai.from_torch(module, torch.zeros(1, 3, 16))
    X = series((3, 16), 5, seed=1)
    np.testing.assert_allclose(
        net.predict(X), module(torch.from_numpy(X)).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    x = torch.from_numpy(X).requires_grad_(True)
    module(x)[:, 2].sum().backward()
    got = net.gradient(X, np.full(5, 2))
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_recurrent_first_model_equals_torch():
    """A GRU reading the network input, its final state and average pooling, equals torch."""
    torch.manual_seed(1)
    module = RecurrentFirst().eval()
    net = xai.from_torch(module, torch.zeros(1, 7, 2))
    X = series((7, 2), 4, seed=2)
    np.testing.assert_allclose(
        net.predict(X), module(torch.from_numpy(X)).detach().numpy(), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    ("make", "shape"),
    [(lambda: ConvRecurrent(), (3, 16)), (lambda: RecurrentFirst(), (7, 2))],
    ids=["channels-first", "steps-first"],
)
def test_ig_per_step_equals_captum(make, shape):
    """IG on the imported sequence model equals Captum's IntegratedGradients, per step and channel."""
    from captum.attr import IntegratedGradients

    torch.manual_seed(2)
    module = make().eval()
    net = xai.from_torch(module, torch.zeros(1, *shape))
    X = series(shape, 3, seed=3)
    target = np.array([0, 1, 2])
    e = xai.explain(
        net, X, method="ig", target=target, steps=16, integration="gausslegendre", progress=False
    )
    assert e.values.shape == X.shape
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


@pytest.mark.parametrize("backend", ["gpu", "tpu"])
def test_sequence_ig_runs_on_gpu_and_tpu_close_to_cpu(backend):
    """IG of the Conv1d + LSTM model runs on gpu and tpu (bf16) and stays close to the cpu's."""
    torch.manual_seed(3)
    module = ConvRecurrent().eval()
    net = xai.from_torch(module, torch.zeros(1, 3, 16))
    X = series((3, 16), 2, seed=4)
    ref = xai.explain(net, X, method="ig", target=0, steps=8, progress=False)
    runner = xai.ModelRunner(net, backend)
    e = xai.explain(net, X, method="ig", target=0, steps=8, backend=backend, progress=False)
    assert e.values.shape == X.shape
    rel = np.abs(e.values - ref.values).max() / np.abs(ref.values).max()
    assert rel <= (5e-2 if backend == "tpu" else 1e-4)
    runner.predict(X)
    assert runner.counters["macs"] > 0


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_stacked_recurrent_layers_equal_torch(kind):
    """num_layers=2 (one ONNX node per layer, dropout an identity at inference) equals torch."""
    torch.manual_seed(4)
    rnn = (tnn.LSTM if kind == "lstm" else tnn.GRU)(
        3, 5, num_layers=2, batch_first=True, dropout=0.3, bidirectional=True
    )

    class Stacked(tnn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x):
            return self.rnn(x)[0].sum(1)

    module = Stacked().eval()
    net = xai.from_torch(module, torch.zeros(1, 6, 3))
    X = series((6, 3), 3, seed=5)
    np.testing.assert_allclose(
        net.predict(X), module(torch.from_numpy(X)).detach().numpy(), rtol=1e-4, atol=1e-5
    )
