"""One network and one runner used from many threads give exactly the serial results and counters."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

import xai_core as xai

nn = xai.nn


def residual_cnn() -> "nn.Graph":
    """A small CNN with a residual addition and a batch norm."""
    g = nn.Graph((1, 16, 16), seed=3)
    h = g.add(nn.Conv2D(4, 3, padding="same"), name="conv")
    h = g.add(nn.BatchNormalization(), h)
    h = g.add(nn.ReLU(), h)
    d = g.add(nn.DepthwiseConv2D(3, padding=1), h)
    s = g.add(nn.Add(), [h, d])
    g.add(nn.MaxPool2D(2), s)
    g.add(nn.Flatten())
    g.add(nn.Dense(3))
    g.add(nn.Softmax())
    return g


def test_sixteen_concurrent_ig_and_gradient_calls_equal_serial_results():
    """8 threads, 16 IG and gradient calls on one network and one runner: each equals its serial run."""
    rng = np.random.default_rng(0)
    net = residual_cnn()
    runner = xai.ModelRunner(net, backend="cpu")
    inputs = [rng.normal(size=(12 + k % 3, 1, 16, 16)).astype(np.float32) for k in range(16)]

    def call(k):
        X = inputs[k]
        if k % 2:
            return runner.gradient(X, np.arange(len(X)) % 3)
        return xai.explain(runner, X, "ig", target=k % 3, steps=16, progress=False).values

    serial = [call(k) for k in range(16)]
    runner.reset_counters()
    for k in range(16):
        call(k)
    serial_counters = runner.counters
    runner.reset_counters()
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(call, range(16)))
    for k in range(16):
        np.testing.assert_array_equal(concurrent[k], serial[k], err_msg=f"call {k}")
    counters = runner.counters
    for key in ("matmuls", "macs", "elementwise_ops", "bytes_read", "bytes_written"):
        assert counters[key] == serial_counters[key], key
    assert np.isclose(counters["cycles"], serial_counters["cycles"], rtol=1e-12)


def test_backend_counters_are_exact_under_threads():
    """Counts of many threads' matmuls on one TPU backend equal the counts of the same work in series."""
    rng = np.random.default_rng(1)
    be = xai.get_backend("tpu")
    a, b = rng.normal(size=(33, 20)), rng.normal(size=(20, 17))
    for _ in range(64):
        be.matmul(a, b)
        be.elementwise(np.tanh, a)
    expected = be.counters
    be.reset_counters()

    def work(_):
        be.matmul(a, b)
        be.elementwise(np.tanh, a)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, range(64)))
    got = be.counters
    for key, value in expected.items():
        assert np.isclose(got[key], value, rtol=1e-12), key


def test_chunked_ig_on_a_thread_pool_equals_serial():
    """IG in chunks on a thread pool, sharing one graph network, equals the serial explanation."""
    rng = np.random.default_rng(2)
    net = residual_cnn()
    X = rng.normal(size=(20, 1, 16, 16)).astype(np.float32)
    serial = xai.explain(net, X, "ig", target=1, steps=8, progress=False)
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = xai.explain(
            net, X, "ig", target=1, steps=8, progress=False, executor=pool, chunk_size=5
        )
    np.testing.assert_array_equal(threaded.values, serial.values)
