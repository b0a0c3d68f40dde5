"""ModelRunner with native networks: chunking, per-row targets, boundary validation and counters."""

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

nn = xai.nn


@pytest.fixture
def cnn():
    """A small CNN on flat 6x6 images with 3 outputs."""
    return nn.Sequential(
        [
            nn.Reshape((1, 6, 6)),
            nn.Conv2D(2, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.Flatten(),
            nn.Dense(4),
            nn.Tanh(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(36,),
    )


@pytest.fixture
def X():
    """23 random flat images: not a multiple of the chunk size."""
    return np.random.default_rng(0).random((23, 36), dtype=np.float32)


def test_chunked_equals_unchunked(cnn, X):
    """predict, gradient and activations in chunks of 7 equal one big batch, in row order."""
    small = xai.ModelRunner(cnn, batch_size=7)
    big = xai.ModelRunner(cnn, batch_size=1000)
    target = np.arange(23) % 3
    np.testing.assert_allclose(small.predict(X), big.predict(X), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        small.gradient(X, target), big.gradient(X, target), rtol=1e-5, atol=1e-7
    )
    for layer in ("conv2d_1", 3, "dense_1"):
        np.testing.assert_allclose(
            small.activations(X, layer), big.activations(X, layer), rtol=1e-5, atol=1e-7
        )


def test_chunks_are_separate_passes(cnn, X):
    """23 rows in chunks of 7 are 4 forward passes of the 3 matmul layers: 12 matmuls."""
    runner = xai.ModelRunner(cnn, batch_size=7)
    runner.predict(X)
    assert runner.counters["matmuls"] == 4 * 3


def test_targets_are_per_row(cnn, X):
    """Row i of gradient(X, targets) equals row i of gradient(X, targets[i]) for a constant target."""
    runner = xai.ModelRunner(cnn, backend=CPUBackend(dtype="float64"))
    target = np.array([2, 0, 1] * 7 + [0, 2])
    per_row = runner.gradient(X, target)
    constant = np.stack([runner.gradient(X, t) for t in range(3)])
    np.testing.assert_allclose(per_row, constant[target, np.arange(23)], rtol=1e-12, atol=1e-15)
    assert per_row.dtype == np.float64 and per_row.shape == X.shape


def test_counters_count_every_mac(cnn, X):
    """CPU macs = sum of M*K*N over the matmuls: n * MACs per sample forward, twice that for gradients."""
    runner = xai.ModelRunner(cnn, batch_size=10)
    runner.predict(X)
    c = runner.counters
    per_sample = (
        36 * 2 * 9 + 18 * 4 + 4 * 3
    )  # conv (6*6 pixels, 2 filters, 9 taps), dense 18->4, 4->3
    assert cnn.macs_per_sample == per_sample
    assert c["macs"] == 23 * per_sample and c["reads_a"] == c["reads_b"] == c["macs"]
    assert c["bytes_read"] > 2 * c["macs"] * 4 - 1 and c["cycles"] > 0 and c["est_seconds"] > 0
    runner.reset_counters()
    assert runner.counters["macs"] == 0
    runner.gradient(X, 0)
    assert runner.counters["macs"] == 2 * 23 * per_sample  # forward plus input-gradient products


def test_counters_only_grow(cnn, X):
    """Each call adds to every counter it touches and never lowers one."""
    runner = xai.ModelRunner(cnn)
    before = runner.counters
    runner.predict(X[:3])
    middle = runner.counters
    runner.activations(X[:3], "dense_2")
    after = runner.counters
    assert all(middle[k] >= before[k] and after[k] >= middle[k] for k in before)
    assert middle["macs"] > before["macs"] and after["macs"] > middle["macs"]


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (
            lambda X: X[0],
            xai.ShapeError,
            "X must have shape (n_samples, 36); got an array of shape (36,)",
        ),
        (
            lambda X: X[:, :35],
            xai.ShapeError,
            "X must have shape (n_samples, 36); got an array of shape (23, 35)",
        ),
        (lambda X: X.reshape(23, 6, 6), xai.ShapeError, "got an array of shape (23, 6, 6)"),
        (lambda X: np.where(np.arange(36) == 5, np.nan, X), xai.ValidationError, "NaN or infinite"),
        (
            lambda X: np.where(np.arange(36) == 5, np.inf, X),
            xai.ValidationError,
            "first is at index (0, 5)",
        ),
        (lambda X: X[:0], xai.ValidationError, "at least 1 sample"),
        (
            lambda X: pd.DataFrame(X).assign(**{"35": "text"}).rename(columns=str),
            xai.ValidationError,
            "columns ['35'] are not numeric",
        ),
    ],
    ids=["rank1", "features", "rank3", "nan", "inf", "empty", "frame"],
)
@pytest.mark.parametrize(
    "method", ["predict", "gradient", "activations"], ids=["predict", "grad", "act"]
)
def test_bad_inputs_fail_before_any_work(cnn, X, make, error, words, method):
    """Bad X gets a clear error from every runner method, and the backend has counted nothing."""
    runner = xai.ModelRunner(cnn)
    call = {
        "predict": lambda Z: runner.predict(Z),
        "gradient": lambda Z: runner.gradient(Z, 0),
        "activations": lambda Z: runner.activations(Z, "dense_1"),
    }[method]
    with pytest.raises(error) as info:
        call(make(X))
    assert words in str(info.value)
    assert runner.counters["macs"] == 0 and runner.counters["elementwise_ops"] == 0


def test_bad_targets_and_layers(cnn, X):
    """A target outside the outputs, a wrong-length target list and an unknown layer are refused."""
    runner = xai.ModelRunner(cnn)
    with pytest.raises(xai.ValidationError, match=r"must be in \[0, 3\)"):
        runner.gradient(X, 3)
    with pytest.raises(xai.ShapeError, match=r"have shape \(23,\)"):
        runner.gradient(X, [0, 1])
    with pytest.raises(xai.UnknownNameError, match="Unknown layer 'dense_9'. Available: conv2d_1"):
        runner.activations(X, "dense_9")
    assert runner.counters["macs"] == 0


def test_numeric_frames_and_black_boxes():
    """A numeric DataFrame runs like its array; a black box predicts but has no gradients."""
    net = nn.mlp(3, (4,), 2)
    frame = pd.DataFrame({"a": [0.1, 0.2], "b": [1, 2], "c": [0.5, -0.5]})
    runner = xai.ModelRunner(net)
    np.testing.assert_array_equal(runner.predict(frame), runner.predict(frame.to_numpy()))
    box = xai.ModelRunner(lambda Z: Z[:, :2])
    assert box.predict(frame).shape == (2, 2)
    with pytest.raises(xai.CapabilityError, match="black box"):
        box.gradient(frame, 0)


def test_predict_validated_equals_predict(cnn, X):
    """Rows already checked skip the checks only: cast to the runner's dtype, chunked the same."""
    runner = xai.ModelRunner(cnn, batch_size=5)
    X64 = X.astype(np.float64)
    np.testing.assert_array_equal(runner.predict_validated(X64), runner.predict(X))
    assert runner.predict_validated(X64).dtype == np.float32
    wide = xai.ModelRunner(cnn, backend=CPUBackend(dtype="float64"))
    np.testing.assert_array_equal(wide.predict_validated(X64), wide.predict(X64))


def test_gradient_validated_equals_gradient(cnn, X):
    """Points built from checked rows skip the checks only: the same gradients, chunked the same."""
    runner = xai.ModelRunner(cnn, batch_size=5)
    target = np.arange(len(X)) % 3
    np.testing.assert_array_equal(
        runner.gradient_validated(X.astype(np.float64), target), runner.gradient(X, target)
    )


def test_default_batch_size_bounds_the_largest_layer_output_per_chunk():
    """A network whose layers make many values per row gets fewer rows per chunk by default,
    and the same outputs as one chunk of every row; an explicit batch_size is kept."""
    from xai_core import nn
    from xai_core.model.runner import ACTIVATION_ELEMENTS, MAX_BATCH_ROWS

    small = nn.Sequential([nn.Dense(4)], input_shape=(3,))
    assert xai.ModelRunner(small).batch_size == MAX_BATCH_ROWS
    wide = nn.Sequential(
        [nn.Conv2D(64, 3, padding=1), nn.GlobalAveragePooling2D(), nn.Dense(2)],
        input_shape=(3, 64, 64),
    )
    runner = xai.ModelRunner(wide)
    assert runner.batch_size == ACTIVATION_ELEMENTS // (64 * 64 * 64) < MAX_BATCH_ROWS
    assert xai.ModelRunner(wide, batch_size=4096).batch_size == 4096
    X = np.random.default_rng(0).uniform(size=(runner.batch_size + 3, 3, 64, 64))
    X = X.astype(np.float32)
    np.testing.assert_allclose(
        runner.predict(X), xai.ModelRunner(wide, batch_size=len(X)).predict(X), rtol=1e-6
    )
