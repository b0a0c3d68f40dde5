"""Cloud TPU boards and pods: sharded values equal one core's, counters per device, collectives."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.collectives import all_gather_cost, all_reduce_cost
from xai_core.backends.presets import TPU_POD_PRESETS
from xai_core.backends.systolic import gemm_cost
from xai_core.testing import check_backend


def _one_core(preset="v2-8"):
    """The single TensorCore (or v4 chip) that one device of the preset is."""
    spec = TPU_POD_PRESETS[preset]
    return xai.get_backend("tpu", preset=spec["chip"], mxus=spec["mxus_per_core"] * spec["cores"])


def _mlp(seed=0):
    return xai.nn.mlp(20, [16], 3, seed=seed)


@pytest.mark.parametrize("preset", ["v2-8", "v3-32", "v4-8", "v4-128"])
def test_pod_keeps_backend_contract(preset):
    """check_backend passes for boards and slices."""
    check_backend(xai.get_backend("tpu_pod", preset=preset))


@pytest.mark.parametrize(
    "preset,chips,devices,hosts,dims",
    [
        ("v2-8", 4, 8, 1, (2, 2)),
        ("v2-512", 256, 512, 64, (16, 16)),
        ("v3-8", 4, 8, 1, (2, 2)),
        ("v3-2048", 1024, 2048, 256, (32, 32)),
        ("v4-8", 4, 4, 1, (2, 2, 1)),
        ("v4-8192", 4096, 4096, 1024, (16, 16, 16)),
    ],
)
def test_presets_match_the_cloud_tpu_types(preset, chips, devices, hosts, dims):
    """Chips, data-parallel devices, hosts and torus shape of the documented accelerator types."""
    d = xai.get_backend("tpu_pod", preset=preset).describe()
    assert (d["chips"], d["devices"], d["hosts"], d["torus"]) == (chips, devices, hosts, dims)
    assert d["chips"] == np.prod(dims)


@pytest.mark.parametrize(
    "preset,per_device,per_chip",
    [("v2-8", 8.0, 16.0), ("v3-32", 16.0, 32.0), ("v4-8", 32.0, 32.0)],
)
def test_memory_is_per_device_and_per_chip(preset, per_device, per_chip):
    """HBM per data-parallel device (a v2/v3 TensorCore has half its chip's) and per chip."""
    d = xai.get_backend("tpu_pod", preset=preset).describe()
    assert (d["memory_gib"], d["memory_gib_per_chip"]) == (per_device, per_chip)
    assert d["memory_gib"] * d["devices"] == d["memory_gib_per_chip"] * d["chips"]


@pytest.mark.parametrize(
    "preset,peak_pflops,rel",
    [
        ("v2-512", 11.5, 0.025),  # 11.5 PF (Google, 2017: 45 TF per chip; 700 MHz gives 45.9)
        ("v3-2048", 126.0, 0.005),  # Cloud TPU v3 docs: 126 petaflops per pod
        ("v4-8192", 1100.0, 0.03),  # Cloud TPU v4 docs: 1.1 exaflops per pod
        ("v3-8", 0.492, 0.005),  # 4 chips x 123 teraflops
    ],
)
def test_published_peak_per_preset(preset, peak_pflops, rel):
    """The pods' bf16 peaks are the published ones."""
    d = xai.get_backend("tpu_pod", preset=preset).describe()
    assert d["peak_tops"] / 1e3 == pytest.approx(peak_pflops, rel=rel)


@pytest.mark.parametrize("preset,tbps,rel", [("v3-2048", 340.0, 0.02), ("v4-8192", 1100.0, 0.01)])
def test_links_give_the_documented_all_reduce_bandwidth(preset, tbps, rel):
    """Chips x links x link bandwidth is the documented all-reduce bandwidth per pod."""
    s = TPU_POD_PRESETS[preset]
    total = s["chips"] * s["ici_links_per_chip"] * s["ici_gbps_per_link"] / 8 / 1e3
    assert total == pytest.approx(tbps, rel=rel)


def test_sharded_matmul_values_and_per_device_counters():
    """Values equal one core's bit for bit; each device's cycles are its shard's closed form."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(37, 300)).astype(np.float32)
    b = rng.normal(size=(300, 40)).astype(np.float32)
    pod, one = xai.get_backend("tpu_pod", preset="v2-8"), _one_core()
    assert np.array_equal(pod.matmul(a, b), one.matmul(a, b))
    big = gemm_cost(5, 300, 40, array=(128, 128)).cycles  # 37 rows: 5 devices x 5, 3 x 4
    small = gemm_cost(4, 300, 40, array=(128, 128)).cycles
    assert pod.device_cycles.tolist() == [big] * 5 + [small] * 3
    c = pod.counters
    assert c["compute_cycles"] == big
    assert c["macs"] == 37 * 300 * 40 and c["device_matmuls"] == 8 and c["matmuls"] == 1


def test_explain_ig_on_a_board_equals_one_core():
    """IG through explain(backend=v2-8): bit-identical attributions; path points are sharded."""
    rng = np.random.default_rng(1)
    net = _mlp()
    X = rng.normal(size=(13, 20)).astype(np.float32)
    pod, one = xai.get_backend("tpu_pod", preset="v2-8"), _one_core()
    e_pod = xai.explain(net, X, method="ig", backend=pod, target=0, steps=16)
    e_one = xai.explain(net, X, method="ig", backend=one, target=0, steps=16)
    assert np.array_equal(e_pod.values, e_one.values)
    c = pod.counters
    assert c["batches"] >= 2 and c["infeed_bytes"] > 0 and c["gather_seconds"] > 0
    # eight devices share the rows; the slowest takes less than the single core (each
    # fold still pays the array's fill and drain, so far less than 8x for small GEMMs)
    assert c["compute_cycles"] < one.counters["cycles"]
    assert c["macs"] == one.counters["macs"]
    spread = pod.device_cycles.max() - pod.device_cycles.min()
    assert spread <= pod.device_cycles.max() * 0.25


def test_runner_predict_on_pod_equals_one_core():
    """ModelRunner.predict on a pod gives one core's outputs and counts the infeed."""
    rng = np.random.default_rng(2)
    net = _mlp()
    X = rng.normal(size=(50, 20)).astype(np.float32)
    pod = xai.get_backend("tpu_pod", preset="v3-32")
    r = xai.ModelRunner(net, pod, batch_size=16)
    assert np.array_equal(r.predict(X), xai.ModelRunner(net, _one_core("v3-32")).predict(X))
    c = r.counters
    assert c["batches"] == 4 and c["infeed_bytes"] == X.nbytes
    assert c["gather_bytes"] == 50 * 3 * 4
    assert c["est_seconds"] == pytest.approx(c["compute_seconds"] + c["communication_seconds"])


def test_training_on_a_pod_equals_one_device_and_costs_the_all_reduce():
    """fit on v3-8: the weights of one-device training with the same global batch; one
    all-reduce of the gradient bytes per step, at its closed-form cost."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(64, 20)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    pod_net, one_net = _mlp(), _mlp()
    pod = xai.get_backend("tpu_pod", preset="v3-8")
    pod_net.fit(X, y, batch_size=32, epochs=2, backend=pod, progress=False)
    one_net.fit(X, y, batch_size=32, epochs=2, backend=_one_core("v3-8"), progress=False)
    for w_pod, w_one in zip(pod_net.get_weights(), one_net.get_weights()):
        assert np.array_equal(np.asarray(w_pod), np.asarray(w_one))
    c = pod.counters
    n_params = sum(np.asarray(w).size for w in one_net.get_weights())
    assert c["train_steps"] == 4
    assert c["allreduce_bytes"] == 4 * n_params * 4
    step = pod.all_reduce_cost(n_params * 4)
    assert c["allreduce_seconds"] == pytest.approx(4 * step.seconds)


@pytest.mark.parametrize(
    "dims,wrap", [((4, 4), (True, True)), ((8,), (False,)), ((4, 8, 2), (1, 1, 0))]
)
def test_all_reduce_matches_its_closed_form(dims, wrap):
    """2 x (reduce-scatter) per dimension: (d-1) alpha + (d-1)/d B_i / (r beta), B_i shrinking."""
    nbytes, gbps, lat = 3.0e6, 400.0, 2.0
    cost = all_reduce_cost(nbytes, dims, tuple(map(bool, wrap)), link_gbps=gbps, latency_us=lat)
    beta, alpha = gbps * 1e9 / 8, lat * 1e-6
    want, part, link = 0.0, nbytes, 0.0
    for d, w in zip(dims, wrap):
        rings = 2 if (w or d == 2) else 1
        want += 2 * ((d - 1) * alpha + (d - 1) / d * part / (rings * beta))
        link += 2 * (d - 1) / d * part / rings
        part /= d
    assert cost.seconds == pytest.approx(want, rel=1e-12)
    assert cost.link_bytes == pytest.approx(link, rel=1e-12)
    assert cost.steps == 2 * sum(d - 1 for d in dims)
    gather = all_gather_cost(nbytes, dims, tuple(map(bool, wrap)), link_gbps=gbps, latency_us=lat)
    assert gather.seconds == pytest.approx(want / 2, rel=1e-12)


def test_ring_all_reduce_bandwidth_term_is_the_textbook_one():
    """A 1-D torus ring: 2 (n-1)/n B / (2 beta), the bandwidth-optimal ring all-reduce."""
    n, nbytes = 16, 8e6
    cost = all_reduce_cost(nbytes, (n,), (True,), link_gbps=8.0, latency_us=0.0)
    assert cost.seconds == pytest.approx(2 * (n - 1) / n * nbytes / (2 * 1e9))


def test_scaling_efficiency_falls_as_the_pod_grows():
    """The scaling table: compute shrinks, communication does not, efficiency drops below 1."""
    from xai_core.backends.scaling import training_scaling

    net = _mlp()
    table = training_scaling(net, batch_size=256, presets=["v3-8", "v3-32", "v3-128"])
    assert list(table["preset"]) == ["v3-8", "v3-32", "v3-128"]
    assert table["compute_seconds"].is_monotonic_decreasing
    assert (table["efficiency"] <= 1.0 + 1e-12).all() and table["efficiency"].iloc[-1] < 1.0
    assert (table["allreduce_seconds"] > 0).all()


def test_bad_pod_settings_raise_before_work():
    """Unknown presets and negative latency are refused with the argument named."""
    with pytest.raises(xai.errors.UnknownNameError, match="v9-8"):
        xai.get_backend("tpu_pod", preset="v9-8")
    with pytest.raises(xai.errors.ValidationError, match="ici_latency_us"):
        xai.get_backend("tpu_pod", preset="v2-8", ici_latency_us=-1)


def test_cli_report_and_compare_backends_describe_the_topology(capsys):
    """`xai backends` and the report's counters show the torus; compare_backends takes a pod."""
    from xai_core.cli.main import main
    from xai_core.report.sections import render_counters

    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "tpu_pod" in out and "v3-2048" in out and "2 x 2 mesh of 4 v2 chips" in out
    rng = np.random.default_rng(4)
    net = _mlp()
    X = rng.normal(size=(6, 20)).astype(np.float32)
    pod = xai.get_backend("tpu_pod", preset="v3-32")
    html = render_counters(xai.ModelRunner(net, pod))
    assert "4 x 4 torus of 16 v3 chips" in html and "allreduce_seconds" in html
    cmp = xai.compare_backends(net, X, "ig", backends=[_one_core("v3-32"), pod], steps=8)
    assert cmp.explanations["tpu_pod"].values.shape == (6, 20)
    assert np.array_equal(cmp.explanations["tpu_pod"].values, cmp.explanations["tpu"].values)


def test_weak_scaling_composition_equals_a_real_pod_run():
    """Weak scaling's one-device step plus closed-form communication is what the pod counts."""
    from xai_core.backends.scaling import training_scaling

    net = _mlp()
    table = training_scaling(net, batch_size=16, presets=["v3-8"], per_device=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16 * 8, 20)).astype(np.float32)
    pod = xai.get_backend("tpu_pod", preset="v3-8")
    trial = _mlp()
    trial.fit(X, np.arange(len(X)) % 3, batch_size=len(X), epochs=1, backend=pod, progress=False)
    c = pod.counters
    assert table["global_batch"].iloc[0] == 128
    assert table["allreduce_seconds"].iloc[0] == pytest.approx(c["allreduce_seconds"])
    assert table["infeed_seconds"].iloc[0] == pytest.approx(c["infeed_seconds"])
    # the slowest device's compute: the same GEMM shards; vector work rounds per device
    assert table["compute_seconds"].iloc[0] == pytest.approx(c["compute_seconds"], rel=0.02)
