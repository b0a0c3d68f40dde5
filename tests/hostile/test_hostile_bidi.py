"""Names holding bidi overrides (U+202E) cannot reorder the text after them, in any section.

``FACTORIES`` builds one result per registered report section (first- and third-party
sections alike: a section without a row fails) whose every user string (feature, class,
output, metadata and method names, titles) is ``\\u202eR<k>``: a right-to-left override
that, left open, reverses everything after it to the end of the paragraph. The oracle is
the Unicode Bidirectional Algorithm's rule X6a: a Pop Directional Isolate (U+2069) closes
every embedding and override opened since its isolate initiator. So every override in the
page's text (text nodes, attribute values, and the text of the SVG images carried as data
URIs) must be the start of a user string wrapped exactly as ``FSI \\u202eR<k> PDI``; the
JSON data blocks (the exact strings, for scripts) are not text and are skipped.
"""

from __future__ import annotations

import base64
import re
import warnings
from collections.abc import Callable
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import xai_core as xai
from xai_core.plugin.manager import get_registry
from xai_core.report import isolate, render_fragment

RLO = "\u202e"


def name(k: int) -> str:
    """The k-th hostile user string."""
    return f"{RLO}R{k}"


NAMES = [name(k) for k in range(4)]
ISOLATED = re.compile("\u2068\u202eR\\d+\u2069")


class _Text(HTMLParser):
    """The text runs of a page: text nodes and attribute values, outside script and style."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.runs: list[str] = []
        self.svgs: list[str] = []
        self._skip = 0
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        for _, value in attrs:
            if value is None:
                continue
            if value.startswith("data:image/svg+xml;base64,"):
                self.svgs.append(base64.b64decode(value.split(",", 1)[1]).decode("utf-8"))
            else:
                self.runs.append(value)

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.runs.append(data)


def leaks(html: str) -> list[str]:
    """Text runs (of the page and of its SVG images) holding an override not isolated alone."""
    page = _Text(html)
    runs = list(page.runs)
    for svg in page.svgs:
        runs.extend(_Text(svg).runs)
    return [r for r in runs if RLO in ISOLATED.sub("", r)]


def _clf(n_outputs: int = 2):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int) if n_outputs == 2 else np.arange(60) % n_outputs
    return LogisticRegression().fit(X, y), X, y


def _explanation():
    rng = np.random.default_rng(1)
    return xai.Explanation(
        values=rng.normal(size=(4, 3)),
        base_values=np.zeros(4),
        target=[0, 1, 1, 0],
        data=rng.normal(size=(4, 3)),
        feature_names=NAMES[:3],
        output_names=NAMES[:2],
        method=name(9),
        backend="cpu",
        meta={"options": {name(5): name(6)}, name(7): [name(8)]},
    )


def _dataset():
    import types

    rng = np.random.default_rng(2)
    return types.SimpleNamespace(
        X=rng.random((6, 3)).astype(np.float32),
        y=np.array([0, 1, 1, 0, 1, 1]),
        class_names=tuple(NAMES[:2]),
        feature_names=tuple(NAMES[:3]),
        image_shape=None,
        name=name(9),
        description=name(8),
    )


def _session():
    clf, X, y = _clf()
    frame = pd.DataFrame(X, columns=NAMES[:3])
    frame[NAMES[2]] = pd.Categorical(np.where(X[:, 2] > 0, NAMES[3], name(5)))
    from xai_core.nn import from_sklearn  # noqa: F401  (the model sees the codes)

    model = LogisticRegression().fit(frame.assign(**{NAMES[2]: frame[NAMES[2]].cat.codes}), y)
    w = xai.what_if(model, frame, y, output_names=NAMES[:2])
    w.edit(0, {NAMES[0]: 3.0})
    return w


def _compare():
    w = _session()
    return w.compare_models(w.runner, names=(name(10), name(11)))


def _projection():
    rng = np.random.default_rng(3)
    p = xai.project(
        rng.normal(size=(30, 4)),
        labels=[NAMES[k % 3] for k in range(30)],
        metadata={name(7): [name(k % 2 + 8) for k in range(30)]},
    )
    return p.show(color_by=name(7))  # the legend names the column and its values


def _playground():
    from xai_datasets import playground

    data = playground("xor", 40, seed=0)  # its inputs are named by the playground (x1, x2)
    net = xai.nn.mlp(2, hidden=(3,), n_outputs=2, dtype="float64")
    return xai.playground_view(net, data, resolution=9)


def _teachable():
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(0, 1, (4, 6)), rng.normal(2, 1, (4, 6))])
    trainer = xai.teachable_trainer((X, np.repeat([0, 1], 4), NAMES[:2]), kind="pose")
    trainer.train(epochs=2, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        trainer.export(Path(tmp) / name(3))  # the folder's name is shown too
    return trainer


def _backend_comparison():
    net = xai.nn.mlp(3, hidden=(4,), n_outputs=2)
    net.build((3,))
    net.feature_names = NAMES[:3]
    X = np.random.default_rng(4).normal(size=(3, 3)).astype(np.float32)
    return xai.compare_backends(net, X, method="ig", backends=("cpu", "tpu"), steps=4)


def _method_comparison():
    net = xai.nn.mlp(3, hidden=(4,), n_outputs=2)
    X = np.random.default_rng(5).normal(size=(3, 3)).astype(np.float32)
    options = {"lime": {"background": X, "n_samples": 100}, "ig": {"steps": 4}}
    return xai.compare_methods(
        net, pd.DataFrame(X, columns=NAMES[:3]), methods=("lime", "ig"), method_options=options
    )


def _faithfulness():
    net = xai.nn.mlp(3, hidden=(4,), n_outputs=2)
    X = pd.DataFrame(np.random.default_rng(6).normal(size=(3, 3)), columns=NAMES[:3])
    e = xai.explain(net, X, method="ig", steps=4)
    return xai.faithfulness(net, e, steps=3, n_random=2, infidelity_samples=5)


def _permutation_importance():
    clf, X, y = _clf()
    return xai.permutation_importance(clf, X, y, n_repeats=2, feature_names=NAMES[:3])


def _ale():
    clf, X, _ = _clf()
    return xai.ale(clf, X, grid_size=4, feature_names=NAMES[:3], output_names=[NAMES[3], name(4)])


FACTORIES: dict[str, Callable[[], object]] = {
    "explanation": _explanation,
    "dataset": _dataset,
    "counters": lambda: {name(0): 12, name(1): 3.5},
    "table": lambda: pd.DataFrame({name(0): [1.5, 2.5], name(1): [name(2), name(3)]}),
    "backend_comparison": _backend_comparison,
    "method_comparison": _method_comparison,
    "faithfulness": _faithfulness,
    "global_permutation_importance": _permutation_importance,
    "global_ale": _ale,
    "playground": _playground,
    "teachable": _teachable,
    "projection": _projection,
    "whatif": _session,
    "whatif_edit": lambda: _session().history[-1],
    "whatif_counterfactuals": lambda: _session().counterfactual(0, n=2, n_samples=200),
    "whatif_partial_dependence": lambda: _session().partial_dependence(NAMES[0]),
    "whatif_slices": lambda: _session().slices(NAMES[1]),
    "whatif_thresholds": lambda: _session().thresholds(NAMES[1]),
    "whatif_neighbors": lambda: _session().neighbors(0, k=3),
    "whatif_features": lambda: _session().feature_stats(NAMES[2]),
    "whatif_compare": lambda: _compare(),
}


def test_every_registered_section_has_a_case():
    """A section registered without a row here fails: its user text must be checked too."""
    assert sorted(s.name for s in get_registry().report_sections) == sorted(FACTORIES)


@pytest.mark.parametrize("section", list(FACTORIES), ids=list(FACTORIES))
def test_every_section_isolates_user_text(section):
    """Each override in the section's text closes right after its user string (FSI ... PDI)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = FACTORIES[section]()
        html = xai.Report(name(9), seed=0).add(result, title=name(8)).to_html()
    assert RLO in html  # the hostile strings reached the page
    assert leaks(html) == []
    assert leaks(render_fragment(result)) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain ascii", "plain ascii"),
        ("ünïcødé ✓ 数字", "ünïcødé ✓ 数字"),  # no right-to-left letter, no control
        (f"{RLO}abc", f"\u2068{RLO}abc\u2069"),
        ("שלום", "\u2068שלום\u2069"),
        ("مرحبا 12", "\u2068مرحبا 12\u2069"),
        (f"\u2069{RLO}x", f"\u2068{RLO}x\u2069"),  # a stray PDI would close the wrapper early
        (f"\u2067a\u2069{RLO}", f"\u2068\u2067a\u2069{RLO}\u2069"),  # a balanced one stays
        (f"\u2068{RLO}x\u2069", f"\u2068{RLO}x\u2069"),  # already isolated: not wrapped again
        ("\u2068a\u2069\u2068b\u2069", "\u2068\u2068a\u2069\u2068b\u2069\u2069"),  # two isolates
        (f"\u2068{RLO}x", f"\u2068\u2068{RLO}x\u2069\u2069"),  # an FSI left open is closed
    ],
    ids=[
        "ascii",
        "ltr-unicode",
        "override",
        "hebrew",
        "arabic",
        "stray-pdi",
        "balanced-pdi",
        "isolated",
        "two-isolates",
        "open-fsi",
    ],
)
def test_isolate(text, expected):
    """Only text that can reorder its surroundings is wrapped, once; a stray PDI is dropped."""
    assert isolate(text) == expected
    assert isolate(isolate(text)) == isolate(text)


def test_the_environment_isolates_every_printed_string_but_not_markup():
    """Text and attributes are isolated by the core's environment; Markup is left as it is."""
    from markupsafe import Markup

    from xai_core.report import environment

    t = environment().from_string('<p title="{{ n }}">{{ n }}: {{ v }}</p>{{ m }}')
    html = t.render(n=name(1), v=3, m=Markup("<b>x</b>"))
    assert html == f'<p title="\u2068{name(1)}\u2069">\u2068{name(1)}\u2069: 3</p><b>x</b>'


def test_the_what_if_editors_panels_isolate_user_text():
    """The live editor's panels (prediction, bars, counterfactual, PD, scatter, history)."""
    from xai_whatif import EditorState
    from xai_whatif import editor_view as view

    w = _session()
    state = EditorState(w, 0, method="lime", explain_options={"n_samples": 100})
    state.set_value(NAMES[0], 1.5)
    state.set_value(NAMES[2], NAMES[3])
    panels = [
        view.prediction_html(state),
        view.explanation_html(state),
        view.counterfactual_html(state),
        view.dependence_html(state),
        view.scatter_html(state),
        view.history_html(state),
    ]
    html = "".join(panels)
    assert RLO in html
    assert leaks(html) == []
