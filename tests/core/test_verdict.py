"""The verdict of comparisons: documented thresholds, plain sentences, first in every view and report."""

import re
import types

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.compare import metrics
from xai_core.compare.results import BackendComparison
from xai_core.compare.verdict import (
    AGREE_COSINE,
    UNIT_ROUNDOFF,
    judge_noise,
    rounding_threshold,
    unit_roundoff,
)
from xai_core.errors import PluginError
from xai_core.plugin.manager import register_plugin
from xai_core.testing import LinearModel


def _attributions(n_rows=6, n_features=784, seed=0):
    """Image-like attributions: a few strong features, most within 1e-8 of zero (the borders)."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n_rows, n_features)) * 1e-9
    values[:, :60] = rng.normal(size=(n_rows, 60)) * 0.05
    return values


def _comparison(others, reference="cpu", method="ig", flipped=None):
    """A BackendComparison of hand-made attributions: ``others`` maps name -> (values, format)."""
    ref = _attributions()
    tables = []
    for name, (values, number_format) in {reference: (ref, "fp32"), **others}.items():
        table = metrics.agreement(ref, values, k=10)
        table.insert(0, "row", np.arange(len(ref)))
        table.insert(0, "backend", name)
        table["flipped"] = False if flipped is None or name != flipped[0] else flipped[1]
        tables.append(judge_noise(table, number_format, "fp32"))
    rows = pd.concat(tables, ignore_index=True)
    formats = {reference: "fp32", **{n: f for n, (_, f) in others.items()}}
    return BackendComparison(
        method=method,
        reference=reference,
        explanations={},
        rows=rows,
        summary=pd.DataFrame(),
        options={"n_seeds": 1},
        formats=formats,
    )


def test_rounding_thresholds_are_sixteen_unit_roundoffs_of_the_coarser_format():
    """fp32 2^-24, bf16 2^-8 and int8 1/254, times 16; the coarser of backend and reference counts."""
    assert rounding_threshold("fp32") == 16 * 2.0**-24
    assert rounding_threshold("bf16") == 16 * 2.0**-8 == rounding_threshold("fp32", "bf16")
    assert rounding_threshold("int8") == pytest.approx(16 / 254)
    assert rounding_threshold("fp64", "fp64") == 16 * 2.0**-53
    assert unit_roundoff("float16") == UNIT_ROUNDOFF["fp16"] == np.finfo(np.float16).eps / 2
    assert unit_roundoff("no such format") == UNIT_ROUNDOFF["fp32"]


def test_a_gpu_like_difference_is_within_noise_and_its_ranks_are_not_reported():
    """A deterministic method's 1e-9 reordering is rounding: not beyond noise, Spearman not reported."""
    ref = _attributions()
    gpu = ref + np.random.default_rng(1).normal(size=ref.shape) * 1e-9
    raw = metrics.agreement(ref, gpu)
    assert raw["spearman"].mean() < 0.95  # the ranks of the near-zero features do move
    judged = judge_noise(raw, "fp32")
    assert not judged["beyond_noise"].any()
    assert judged["spearman"].isna().all() and judged["top_k_overlap"].isna().all()
    np.testing.assert_array_equal(judged["threshold"], 16 * 2.0**-24)
    verdict = _comparison({"gpu": (gpu, "fp32")}).verdict
    (decision,) = verdict.decisions
    assert not decision.beyond_noise and decision.mean_spearman is None
    assert verdict.changed == ()
    assert verdict.sentence == "ig: gpu agrees with cpu within rounding. No prediction flips."
    assert "rank statistics not meaningful" in decision.line


def test_an_int8_like_difference_is_beyond_noise():
    """Steps of several int8 quanta exceed 16/254 of the scale: beyond noise, ranks reported."""
    ref = _attributions()
    steps = np.random.default_rng(2).integers(-12, 13, size=ref.shape)
    edge = ref + steps * np.abs(ref).max(axis=1, keepdims=True) / 127
    judged = judge_noise(metrics.agreement(ref, edge), "int8")
    assert judged["beyond_noise"].all() and judged["spearman"].notna().all()
    c = _comparison({"gpu": (ref + 1e-9, "fp32"), "edgetpu": (edge, "int8")})
    assert c.verdict.changed == ("edgetpu",)
    assert c.verdict.sentence.startswith(
        "ig: edgetpu changes the attributions beyond int8 rounding (by up to "
    )
    assert "gpu agrees with cpu within rounding" in c.verdict.sentence
    edge_decision = c.verdict.decisions[1]
    assert edge_decision.rows_beyond == 6 and edge_decision.mean_spearman is not None
    # the same difference is within noise only for a format that coarse: not for bf16
    assert judge_noise(metrics.agreement(ref, ref * (1 + 0.03)), "bf16")["beyond_noise"].sum() == 0
    assert judge_noise(metrics.agreement(ref, ref * (1 + 0.03)), "fp32")["beyond_noise"].all()


def test_differences_read_as_percentages_or_small_numbers():
    """A whole-scale difference reads 100%, a small one in scientific notation."""
    ref = _attributions()
    c = _comparison({"edgetpu": (ref * (1 - 0.99996), "int8"), "gpu": (ref * (1 + 2e-8), "fp32")})
    assert "by up to 100% of the attribution scale" in c.verdict.sentence
    assert "differences up to 2.0e-08 of the attribution scale" in c.verdict.decisions[1].line


def test_the_seed_spread_raises_the_threshold():
    """A seeded method's own spread across seeds is its noise when larger than rounding."""
    ref = _attributions()
    table = metrics.agreement(ref, ref * 1.1)
    judged = judge_noise(table, "fp32", seed_spread=np.full(len(ref), 0.2))
    np.testing.assert_array_equal(judged["threshold"], 0.2)
    assert not judged["beyond_noise"].any()
    assert judge_noise(table, "fp32", seed_spread=np.full(len(ref), 0.05))["beyond_noise"].all()


def test_a_flip_is_reported():
    """A backend whose predicted class differs on a row says so, in the sentence and its line."""
    ref = _attributions()
    flips = np.zeros(6, dtype=bool)
    flips[2] = True
    c = _comparison({"tpu": (ref * (1 + 1e-3), "bf16")}, flipped=("tpu", flips))
    assert c.verdict.sentence.endswith("Predictions flip on tpu (1 of 6).")
    assert c.verdict.decisions[0].line.endswith("1 of 6 predictions flips.")
    assert c.verdict.decisions[0].flipped == 1


@pytest.fixture(scope="module")
def nets():
    """Two small trained ReLU MLPs: 64 features (gpu reorders sums) and 12 (int8 saliency moves)."""
    out = {}
    for n_features in (64, 12):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, n_features)).astype(np.float32)
        y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(int)
        hidden = (32,) if n_features == 64 else (16,)
        net = xai.nn.mlp(n_features, hidden=hidden, n_outputs=2, activation="relu", seed=0)
        net.fit(X, y, epochs=10 if n_features == 12 else 5, progress=False)
        out[n_features] = (net, X[:4])
    return out


def test_real_gpu_and_edgetpu_comparisons(nets):
    """On real backends the gpu's fp32 reordering is within noise, int8 saliency is beyond it."""
    net, X = nets[64]
    c = xai.compare_backends(net, X, method="saliency", backends=("cpu", "gpu"))
    gpu = c.rows[c.rows.backend == "gpu"]
    assert (gpu.max_rel_diff > 0).any() and not gpu.beyond_noise.any()
    assert c.formats == {"cpu": "fp32", "gpu": "fp32"} and c.verdict.changed == ()
    net, X = nets[12]
    c = xai.compare_backends(net, X, method="saliency", backends=("cpu", "edgetpu"))
    edge = c.rows[c.rows.backend == "edgetpu"]
    assert c.formats["edgetpu"] == "int8"
    np.testing.assert_array_equal(edge.beyond_noise, edge.max_rel_diff > 16 / 254)
    assert c.verdict.changed == ("edgetpu",)
    assert np.isnan(edge.spearman[~edge.beyond_noise]).all()
    assert np.isfinite(edge.spearman[edge.beyond_noise]).all()
    assert c.summary.loc["edgetpu", "beyond_noise"] == edge.beyond_noise.sum()
    text = str(c)
    assert text.startswith(c.verdict.sentence) and "BackendComparison(" in text
    assert repr(c) == text


def test_method_verdict_agrees_from_cosine_0_9(nets):
    """IG from a zero baseline on a linear model is gradient x input: they agree; saliency need not."""
    rng = np.random.default_rng(3)
    model = LinearModel(rng.normal(size=(16, 2)))
    X = rng.normal(size=(4, 16)).astype(np.float32)
    m = xai.compare_methods(
        model, X, methods=("ig", "gradient_x_input"), method_options={"ig": {"steps": 4}}
    )
    (pair,) = m.verdict.decisions
    assert pair.agree and pair.mean_cosine >= AGREE_COSINE and pair.rows_agreeing == 4
    assert m.verdict.sentence.startswith("ig and gradient_x_input agree on cpu")
    net, X = nets[64]
    m = xai.compare_methods(net, X, methods=("ig", "saliency", "gradient_x_input"))
    cosine = m.matrices["cosine"]
    for d in m.verdict.decisions:
        assert d.mean_cosine == pytest.approx(cosine.loc[d.method_a, d.method_b])
        assert d.agree == (d.mean_cosine >= 0.9)
    assert str(m).startswith(m.verdict.sentence)


def test_comparison_views_open_with_the_verdict_and_show_words(nets):
    """The fragment opens with the verdict; headers are words; all-NaN columns are dropped."""
    net, X = nets[64]
    c = xai.compare_backends(net, X, method="saliency", backends=("cpu", "gpu"))
    assert c.summary["explanation_energy_j"].isna().all()  # kept in the data
    html = c._repr_html_()
    assert html.index('class="xai-verdict"') < html.index("<table")
    assert "<th>Max abs diff</th>" in html and "<th>Mean Spearman</th>" in html
    assert "max_abs_diff</th>" not in html and "Explanation energy (J)" not in html
    # within noise on both: the rank column stays, shown as not meaningful
    summary = html[html.index("Summary per backend") : html.index("Per row")]
    assert (
        re.search(r'<td class="xai-num" data-sort="[^"]*">–</td>', summary)
        or "<td>–</td>" in summary
    )
    m = xai.compare_methods(net, X, methods=("ig", "saliency"))
    fragment = m._repr_html_()
    assert fragment.index('class="xai-verdict"') < fragment.index("<table")


def test_the_report_opens_with_the_verdicts_before_the_contents(nets):
    """The Verdict block comes after the title, before the table of contents and the first section."""
    from xai_datasets import load_mnist

    net, X = nets[64]
    c = xai.compare_backends(net, X, method="saliency", backends=("cpu", "gpu"))
    m = xai.compare_methods(net, X, methods=("ig", "saliency"))
    report = xai.Report("demo", seed=0).add(load_mnist("test").take(np.arange(8)))
    html = report.add(c).add(m).to_html()
    body = html[html.index("<body>") :]
    verdict = body.index('class="xai-verdicts"')
    assert body.index("<h1>") < verdict < body.index('class="xai-toc"')
    assert verdict < body.index('data-xai-section="dataset"')
    block = body[verdict : body.index('class="xai-toc"')]
    assert c.verdict.sentence in block and m.verdict.sentence in block
    assert block.count("<li><a href=") == 2  # one per section with a verdict


class _Result:
    label = "<b>x</b>"


def test_the_verdict_hook_of_report_sections(fresh_registry):
    """``ReportSection.verdict`` answers None by default; a str is shown escaped; a bad answer names the plugin."""

    def render(r):
        return "<p>ok</p>"

    plain = xai.ReportSection("plain", _Result, render)
    assert plain.verdict(_Result()) is None
    sections = {
        "plain": plain,
        "said": xai.ReportSection("said", _Result, render, verdict=lambda r: f"{r.label} holds"),
        "bad": xai.ReportSection("bad", _Result, render, verdict=lambda r: 42),
    }

    def html_of(name):
        fresh_registry_reset()
        plugin = types.ModuleType(f"verdict_{name}_plugin")
        plugin.xai_register_report_sections = xai.hookimpl(lambda: [sections[name]])
        register_plugin(plugin)
        return xai.Report("t", seed=0).add(_Result()).to_html()

    assert 'class="xai-verdicts"' not in html_of("plain")
    shown = html_of("said")
    assert "&lt;b&gt;x&lt;/b&gt; holds" in shown and "<b>x</b>" not in shown
    with pytest.raises(PluginError, match="verdict must return None, a str") as info:
        html_of("bad")
    assert "verdict_bad_plugin" in str(info.value)


def fresh_registry_reset():
    from xai_core.plugin.manager import reset_registry

    reset_registry()


def test_small_numbers_keep_their_significant_figures():
    """A table column that spans 2.6e-09 to 0.05 shows 2.6e-09, never 0.00000."""
    frame = pd.DataFrame({"difference": [0.0, 2.6e-09, 0.05, 0.0012]})
    html = xai.report.render_fragment(frame)
    cells = re.findall(r'<td class="xai-num" data-sort="[^"]+">([^<]+)</td>', html)
    assert cells[1::2] == ["0.00000", "2.6e-09", "0.05000", "0.00120"]
