"""algorithm='partition': shap's PartitionExplainer on images (blur, constant, inpaint) and tables (clusterings)."""

import builtins

import numpy as np
import pytest
import shap

import xai_core as xai
from xai_core.attribution.seeds import row_seeds
from xai_shap.hierarchy import Hierarchy, image_tree
from xai_shap.partition_run import clustering_seed

SEED = 3


def make_net(n_features, n_outputs=3, seed=0):
    """A float64 tanh network with a product term: interactions of every order."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(n_features, 6))
    w2 = rng.normal(size=(6, n_outputs))

    def f(X):
        X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        return np.tanh(X @ w1) @ w2 + (X[:, :1] * X[:, -1:])

    return f


def f64():
    return xai.get_backend("cpu", dtype="float64")


class Counting:
    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, X):
        self.calls += 1
        return self.f(X)


def shap_rows(explainer, X, **call):
    """shap's values per row, numpy's global generator seeded with the plugin's row seeds."""
    state = np.random.get_state()  # noqa: NPY002 - shap breaks ties with the global generator
    try:
        out = []
        for i, seed in enumerate(row_seeds(SEED, np.arange(len(X)))):
            np.random.seed(int(seed))  # noqa: NPY002
            out.append(explainer()(X[i : i + 1], silent=True, **call))
        return out
    finally:
        np.random.set_state(state)  # noqa: NPY002


def test_contract():
    """check_explainer passes for algorithm='partition' on a table."""
    from xai_core.testing import check_explainer
    from xai_shap import ShapExplainer

    options = {"algorithm": "partition", "background": np.random.default_rng(0).normal(size=(5, 4))}
    check_explainer(ShapExplainer, options=options)


# -- the hierarchies -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape", [(28, 28, 1), (5, 7, 3), (3, 2, 1), (9, 4, 2)], ids=["mnist", "5x7x3", "3x2", "9x4x2"]
)
def test_image_tree_equals_shaps(shape):
    """The image hierarchy is shap's Image masker's clustering, value for value."""
    np.testing.assert_array_equal(image_tree(shape), shap.maskers.Image(0.0, shape).clustering)


def test_leaf_ranges_are_the_depth_first_order():
    """Each node's leaves are one range of scipy's depth-first leaf order."""
    from scipy.cluster.hierarchy import leaves_list, to_tree

    Z = image_tree((6, 5, 2))
    h = Hierarchy.from_linkage(Z)
    np.testing.assert_array_equal(h.order, leaves_list(Z))
    _, nodes = to_tree(Z, rd=True)
    for node in nodes[::7]:
        got = h.order[h.start[node.id] : h.start[node.id] + h.size[node.id]]
        assert sorted(got) == sorted(node.pre_order())


def test_blur_equals_opencv():
    """mask_value='blur(kw,kh)' blurs as cv2.blur (kernel width, height; reflected borders),
    odd, even and larger than the image."""
    cv2 = pytest.importorskip("cv2")
    from xai_shap.image_masker import image_masker

    rng = np.random.default_rng(0)
    for shape in [(9, 7, 3), (6, 5, 1)]:
        images = rng.random((2, *shape))
        for kw, kh in [(3, 3), (4, 2), (1, 5), (12, 12)]:
            masker = image_masker(f"blur({kw},{kh})", shape, images)
            want = np.stack([cv2.blur(im, (kw, kh)).reshape(-1) for im in images])
            np.testing.assert_allclose(masker.hidden_values(images), want, rtol=0, atol=1e-12)


# -- equal to shap's PartitionExplainer ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("mask_value", "max_evals", "scale"),
    [("blur(3,3)", 60, 1), ("blur(4,2)", 300, 1), (0.5, 100, 1), ("inpaint_telea", 80, 255),
     ("inpaint_ns", 80, 255)],
    ids=["blur3-60", "blur4x2-300", "constant", "telea", "ns"],
)  # fmt: skip
def test_images_equal_shaps_partition_explainer(mask_value, max_evals, scale):
    """On (H, W, C) images, every output, the plugin equals shap.PartitionExplainer with
    shap.maskers.Image(mask_value) at the same max_evals, within 1e-8 (float64)."""
    if mask_value.__class__ is str and mask_value.startswith("inpaint"):
        pytest.importorskip("cv2")
    h, w, c = 8, 6, 3
    weights = np.random.default_rng(1).normal(size=(h * w * c, 4)) / 5

    def f(A):
        return np.tanh(np.asarray(A, dtype=np.float64).reshape(len(A), -1) @ weights / scale)

    X = np.random.default_rng(2).random((3, h, w, c)) * scale
    e = xai.explain(
        f, X, method="shap", backend=f64(), algorithm="partition", mask_value=mask_value,
        max_evals=max_evals, seed=SEED, all_classes=True,
    )  # fmt: skip
    want = shap_rows(
        lambda: shap.explainers.Partition(f, shap.maskers.Image(mask_value, (h, w, c))),
        X,
        max_evals=max_evals,
    )
    for i, row in enumerate(want):
        got = np.moveaxis(e.meta["all_values"][i], 0, -1)
        assert np.abs(row.values[0]).max() > 1e-3  # not a game of zeros
        np.testing.assert_allclose(got, row.values[0], rtol=0, atol=1e-8)
        np.testing.assert_allclose(e.meta["all_base_values"][i], row.base_values[0], atol=1e-10)
    assert e.meta["algorithm"] == "partition" and e.meta["image_shape"] == (h, w, c)


def many_outputs_image_model(h, w, c, n_outputs):
    weights = np.random.default_rng(4).normal(size=(h * w * c, n_outputs)) / 5

    def f(A):
        return np.tanh(np.asarray(A, dtype=np.float64).reshape(len(A), -1) @ weights)

    return f


@pytest.mark.parametrize("targets", [[7], [7, 7], [3, 58, 31]], ids=["one", "same", "three"])
def test_targets_of_many_outputs_equal_shaps(targets):
    """With 60 outputs and one target per row (the walk keeps only the targets' node
    values; its queue is still ordered over every output), each row equals shap's
    PartitionExplainer called as usual (every output), at the target's column, within 1e-8."""
    h, w, c = 8, 6, 3
    f = many_outputs_image_model(h, w, c, 60)
    X = np.random.default_rng(5).random((len(targets), h, w, c))
    e = xai.explain(
        f, X, method="shap", backend=f64(), algorithm="partition", mask_value="blur(3,3)",
        max_evals=80, seed=SEED, target=np.array(targets),
    )  # fmt: skip
    want = shap_rows(
        lambda: shap.explainers.Partition(f, shap.maskers.Image("blur(3,3)", (h, w, c))),
        X,
        max_evals=80,
    )
    for i, (row, t) in enumerate(zip(want, targets)):
        assert np.abs(row.values[0][..., t]).max() > 1e-3
        np.testing.assert_allclose(e.values[i], row.values[0][..., t], rtol=0, atol=1e-8)
        np.testing.assert_allclose(e.base_values[i], row.base_values[0][t], atol=1e-10)
    assert np.all(e.meta["additivity_error"] < 1e-8)


def test_explained_outputs_are_those_of_every_output():
    """owen_values with a few outputs per row returns, bit for bit, those columns of the
    walk over every output (same queue order, same arithmetic per node), with fixed contexts too."""
    from xai_shap.partition import owen_values

    n_outputs, n_features = 50, 9
    f = make_net(n_features, n_outputs=n_outputs)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3, n_features))
    tree = Hierarchy.from_linkage(shap.utils.hclust(rng.normal(size=(8, n_features))))

    def evaluate(rows, masks):
        return f(np.where(masks, X[rows], 0.0))  # hidden features take 0

    picked = np.array([[0, 49], [12, 12], [40, 3]])
    seeds = np.array([11, 12, 13], dtype=np.uint32)
    for fixed_context in (None, 0, 1):
        options = dict(max_evals=40, seeds=seeds, fixed_context=fixed_context, progress=False)
        every, base = owen_values(evaluate, 3, tree, n_outputs=n_outputs, **options)
        some, base_some = owen_values(
            evaluate, 3, tree, n_outputs=n_outputs, outputs=picked, **options
        )
        assert some.shape == (3, n_features, 2)
        np.testing.assert_array_equal(some, np.take_along_axis(every, picked[:, None, :], axis=2))
        np.testing.assert_array_equal(base_some, base)


def test_ties_are_broken_as_shap_breaks_them():
    """Two halves of equal sum under a model of the sum tie exactly, with different
    insides; within the budget, which nodes are expanded is decided by the draws: the
    values equal shap's seeded alike, and shap seeded otherwise gives other values."""

    def f(A):
        s = np.asarray(A, dtype=np.float64).reshape(len(A), -1).sum(axis=1, keepdims=True)
        return np.hstack([np.tanh(0.5 * s), (0.5 * s) ** 3])

    X = np.zeros((1, 8, 8, 1))
    X[0, 0, 0], X[0, 4, 0], X[0, 7, 7] = 1.0, 0.5, 0.5
    e = xai.explain(
        f, X, method="shap", backend=f64(), algorithm="partition", mask_value=0.0,
        max_evals=40, seed=SEED, target=0,
    )  # fmt: skip

    def explainer():
        return shap.explainers.Partition(f, shap.maskers.Image(0.0, (8, 8, 1)))

    (want,) = shap_rows(explainer, X, max_evals=40)
    np.testing.assert_allclose(e.values[0], want.values[0][..., 0], rtol=0, atol=1e-10)
    state = np.random.get_state()  # noqa: NPY002
    gaps = []
    for other in range(5):
        np.random.seed(other)  # noqa: NPY002
        row = explainer()(X, max_evals=40, silent=True)
        gaps.append(np.abs(e.values[0] - row.values[0][..., 0]).max())
    np.random.set_state(state)  # noqa: NPY002
    assert max(gaps) > 1e-4  # the draws decide here


def test_flat_and_channels_first_images_use_the_recorded_image_shape():
    """A CNN's flat rows (it records image_shape (C, H, W)) get the values shap gives on the
    (H, W, C) images, back in the rows' own layout."""
    c, h, w = 3, 6, 5
    net = xai.nn.cnn((c, h, w), n_outputs=3, channels=(4,), dtype="float64", seed=1)

    def f_hwc(A):
        chw = np.asarray(A, dtype=np.float64).reshape(len(A), h, w, c).transpose(0, 3, 1, 2)
        return net.predict(chw.reshape(len(A), -1))

    X = np.random.default_rng(5).random((2, c * h * w))
    e = xai.explain(
        net, X, method="shap", backend=f64(), algorithm="partition", mask_value="blur(3,3)",
        max_evals=120, seed=SEED, target=1,
    )  # fmt: skip
    hwc = X.reshape(2, c, h, w).transpose(0, 2, 3, 1)
    want = shap_rows(
        lambda: shap.explainers.Partition(f_hwc, shap.maskers.Image("blur(3,3)", (h, w, c))),
        hwc,
        max_evals=120,
    )
    for i, row in enumerate(want):
        expected = row.values[0][..., 1].transpose(2, 0, 1).reshape(-1)
        np.testing.assert_allclose(e.values[i], expected, rtol=0, atol=1e-8)
    assert e.meta["image_shape"] == (c, h, w)


@pytest.mark.parametrize(
    ("max_evals", "fixed_context", "linkage"),
    [(30, None, None), (90, None, "complete"), (600, None, None), (40, 0, None), (40, 1, "average")],
    ids=["tight", "complete", "full", "context0", "context1-average"],
)  # fmt: skip
def test_tables_equal_shaps_partition_explainer(max_evals, fixed_context, linkage):
    """On a table, every output, the plugin equals shap.PartitionExplainer with a Partition
    masker of the same background (correlation clustering, its noise seeded alike), within 1e-10."""
    n_features = 9
    f = make_net(n_features)
    rng = np.random.default_rng(7)
    X, bg = rng.normal(size=(4, n_features)), rng.normal(size=(8, n_features))
    options = dict(background=bg, max_evals=max_evals, fixed_context=fixed_context, seed=SEED)
    if linkage is not None:
        options["linkage"] = linkage
    e = xai.explain(
        f, X, method="shap", backend=f64(), algorithm="partition", all_classes=True, **options
    )
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(clustering_seed(SEED))  # noqa: NPY002
    Z = shap.utils.hclust(bg, metric="correlation", linkage=linkage or "single")
    np.random.set_state(state)  # noqa: NPY002
    np.testing.assert_array_equal(e.meta["clustering"], Z)
    masker = shap.maskers.Partition(bg, max_samples=len(bg), clustering=Z)
    want = shap_rows(
        lambda: shap.explainers.Partition(f, masker),
        X,
        max_evals=max_evals,
        fixed_context=fixed_context,
    )
    for i, row in enumerate(want):
        got = e.meta["all_values"][i].T
        np.testing.assert_allclose(got, row.values[0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(e.meta["all_base_values"][i], row.base_values[0], atol=1e-12)


def test_default_masker_clustering_is_correlation():
    """With no clustering given the hierarchy is shap's Partition masker's default one."""
    f = make_net(6)
    rng = np.random.default_rng(8)
    X, bg = rng.normal(size=(2, 6)), rng.normal(size=(10, 6))
    e = xai.explain(
        f, X, method="shap", backend=f64(), algorithm="partition", background=bg, seed=SEED
    )
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(clustering_seed(SEED))  # noqa: NPY002
    masker = shap.maskers.Partition(bg, max_samples=len(bg))
    np.random.set_state(state)  # noqa: NPY002
    np.testing.assert_array_equal(e.meta["clustering"], masker.clustering)


def test_explicit_linkage_matrix():
    """A linkage matrix given is the hierarchy; a full budget gives values independent of
    the seed (every node expanded)."""
    from scipy.cluster.hierarchy import linkage

    f = make_net(5)
    rng = np.random.default_rng(9)
    X, bg = rng.normal(size=(3, 5)), rng.normal(size=(6, 5))
    Z = linkage(rng.normal(size=(5, 4)), "ward")
    runs = [
        xai.explain(
            f, X, method="shap", backend=f64(), algorithm="partition", background=bg,
            clustering=Z, max_evals=10_000, seed=s,
        )
        for s in (0, 1)
    ]  # fmt: skip
    np.testing.assert_allclose(runs[0].values, runs[1].values, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(runs[0].meta["clustering"], Z)


# -- properties ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["image", "table"], ids=["image", "table"])
def test_additive_and_deterministic(kind):
    """sum(values) = f(x) - f(fully masked) per row (the blurred image; the background's
    mean output), and the same seed gives the same values."""
    from scipy.ndimage import uniform_filter

    rng = np.random.default_rng(10)
    if kind == "image":
        weights = rng.normal(size=(100, 3)) / 5
        f = lambda A: np.tanh(np.asarray(A).reshape(len(A), -1) @ weights)  # noqa: E731
        X = rng.random((3, 10, 10))
        options = dict(mask_value="blur(3,3)", max_evals=150)
        fully_masked = f(uniform_filter(X, size=(1, 3, 3), mode="mirror"))
    else:
        f = make_net(7)
        X, bg = rng.normal(size=(3, 7)), rng.normal(size=(5, 7))
        options = dict(background=bg, max_evals=60)
        fully_masked = np.tile(f(bg).mean(axis=0), (3, 1))
    e = xai.explain(f, X, method="shap", backend=f64(), algorithm="partition", **options)
    rows = np.arange(3)
    base = fully_masked[rows, e.target]
    np.testing.assert_allclose(e.base_values, base, rtol=0, atol=1e-12)
    fx = f(X)[rows, e.target]
    np.testing.assert_allclose(e.values.reshape(3, -1).sum(axis=1), fx - base, rtol=0, atol=1e-10)
    assert np.all(e.meta["additivity_error"] < 1e-10)
    assert np.abs(e.values).max() > 1e-3
    again = xai.explain(f, X, method="shap", backend=f64(), algorithm="partition", **options)
    np.testing.assert_array_equal(e.values, again.values)


def test_chunked_rows_keep_their_values():
    """Rows explained in chunks get the values of one call (each row's draws are its own)."""
    f = make_net(6)
    rng = np.random.default_rng(11)
    X, bg = rng.normal(size=(5, 6)), rng.normal(size=(4, 6))
    options = dict(background=bg, max_evals=30, algorithm="partition", backend=f64())
    whole = xai.explain(f, X, method="shap", **options)
    chunked = xai.explain(f, X, method="shap", chunk_size=2, **options)
    np.testing.assert_allclose(chunked.values, whole.values, rtol=0, atol=1e-12)


def test_steps_are_batched_over_rows():
    """Each queue step of every row goes to the model in one call: about max_evals / 10 calls."""
    counting = Counting(make_net(8))
    rng = np.random.default_rng(12)
    X, bg = rng.normal(size=(6, 8)), rng.normal(size=(5, 8))
    e = xai.explain(
        counting, X, method="shap", algorithm="partition", background=bg, max_evals=52, seed=0
    )
    assert counting.calls <= 2 + 2 + 50 // 10 + 1  # f(X), the ends, five steps (+ rounding)
    assert e.meta["n_evals"] == len(X) * (1 + 52 * len(bg))


# -- errors ----------------------------------------------------------------------------------------------
BAD = {
    "budget": (dict(max_evals=3), xai.ValidationError, r"max_evals >= 4 .*got max_evals=3"),
    "mask-on-table": (dict(mask_value=0.0), xai.ValidationError, "mask_value applies to images"),
    "metric": (dict(clustering="nope"), xai.ValidationError, r"pdist.*got 'nope'"),
    "linkage-name": (
        dict(linkage="ward"),
        xai.UnknownNameError,
        "linkage 'ward'. Available: average, complete, single",
    ),
    "linkage-shape": (
        dict(clustering=np.zeros((3, 4))),
        xai.ShapeError,
        r"shape \(4, 4\) for 5 features.*got shape \(3, 4\)",
    ),
    "linkage-invalid": (
        dict(clustering=np.array([[0, 1, 1, 2], [0, 2, 1, 3], [3, 4, 1, 5], [5, 6, 1, 7.0]])),
        xai.ValidationError,
        "valid linkage",
    ),
    "groups": (dict(groups=np.arange(5)), xai.ValidationError, "groups does not apply"),
    "context": (dict(fixed_context=2), xai.ValidationError, "fixed_context"),
    "other-algorithm": (
        dict(algorithm="exact", clustering="correlation"),
        xai.ValidationError,
        "clustering applies to algorithm='partition'",
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_options_fail_before_any_work(case):
    """Each bad option names the argument, what it expects and what arrived; no model call."""
    options, error, match = BAD[case]
    counting = Counting(make_net(5, n_outputs=2))
    model = xai.BlackBoxModel(counting, input_shape=(5,), output_names=["a", "b"])
    options = {"algorithm": "partition", "background": np.zeros((4, 5)), **options}
    with pytest.raises(error, match=match):
        xai.explain(model, np.ones((3, 5)), method="shap", target=0, **options)
    assert counting.calls == 0


BAD_IMAGE = {
    "blur": (dict(mask_value="blur(3)"), r"mask_value must be 'blur\(kw,kh\)'.*got 'blur\(3\)'"),
    "zero-kernel": (dict(mask_value="blur(0,3)"), r"got 'blur\(0,3\)'"),
    "background": (dict(background=np.zeros((2, 36))), r"background does not apply .*shape \(2, 36\)"),
    "clustering": (dict(clustering="correlation"), "clustering does not apply"),
    "array": (dict(mask_value=np.zeros(5)), r"one image's 36 values .*got shape \(5,\)"),
    "range": (dict(mask_value="inpaint_ns", scale=-1), r"\[0, 255\]; got values in \[-1"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_IMAGE), ids=list(BAD_IMAGE))
def test_bad_image_options(case):
    """Image options are checked before any model call, naming what arrived."""
    options, match = BAD_IMAGE[case]
    options = dict(options)
    scale = options.pop("scale", 1)
    if str(options.get("mask_value", "")).startswith("inpaint"):
        pytest.importorskip("cv2")
    counting = Counting(lambda A: np.asarray(A).reshape(len(A), -1)[:, :2])
    model = xai.BlackBoxModel(counting, input_shape=(6, 6), output_names=["a", "b"])
    X = np.linspace(0, 1, 72).reshape(2, 6, 6) * scale
    with pytest.raises((xai.ValidationError, xai.ShapeError), match=match):
        xai.explain(model, X, method="shap", algorithm="partition", target=0, **options)
    assert counting.calls == 0


def test_inpaint_without_opencv_names_the_extra(monkeypatch):
    """Without OpenCV, inpainting is refused naming the extra to install."""
    real = builtins.__import__

    def no_cv2(name, *args, **kwargs):
        if name == "cv2":
            raise ImportError("No module named 'cv2'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cv2)
    with pytest.raises(xai.CapabilityError, match=r"xai-core\[inpaint\].*opencv-python-headless"):
        xai.explain(
            lambda A: np.asarray(A).reshape(len(A), -1)[:, :2],
            np.ones((1, 6, 6)) * 10,
            method="shap",
            algorithm="partition",
            mask_value="inpaint_telea",
            target=0,
        )


def test_inpaint_of_unit_images_warns():
    """Images in [0, 1] inpainted (cast to 8 bits, as shap does) get a warning saying so."""
    pytest.importorskip("cv2")
    X = np.random.default_rng(0).random((1, 6, 6))
    with pytest.warns(xai.XaiWarning, match=r"lie in \[0, 1\]"):
        xai.explain(
            lambda A: np.asarray(A).reshape(len(A), -1)[:, :2],
            X,
            method="shap",
            algorithm="partition",
            mask_value="inpaint_telea",
            max_evals=10,
            target=0,
        )
