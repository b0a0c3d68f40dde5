"""Contract checks for explainers, backends and report sections, first- and third-party alike.

Call them from your plugin's tests, on your classes as they are (nothing needs to be
registered or installed first)::

    from xai_core.testing import check_backend, check_explainer, check_report_section

    def test_contract():
        check_explainer(MyExplainer, options={"n_samples": 100})
        check_backend(MyBackend)            # the class, or an instance
        check_report_section(
            xai.ReportSection("mine", MyResult, render_mine), lambda name: MyResult(label=name)
        )

Each check raises :class:`xai_core.errors.ContractError` (an ``AssertionError``) naming
what is broken.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any, ClassVar

import numpy as np

from xai_core.attribution.explainer import CAPABILITIES, DEFAULT_ROLES, Explainer
from xai_core.attribution.explanation import Explanation
from xai_core.backends.base import Backend
from xai_core.errors import ContractError, ShapeError
from xai_core.model.base import Model

__all__ = [
    "HOSTILE",
    "LinearModel",
    "check_backend",
    "check_explainer",
    "check_report_section",
    "litert_reference_outputs",
]


class LinearModel(Model):
    """``f(X) = X.reshape(n, -1) @ weight + bias``: a native model with closed-form gradients.

    A reference for explainer tests: every additive attribution method must give
    ``values = (x - baseline) * weight[:, target]`` on it.

    Parameters
    ----------
    weight : array-like of shape (n_features, n_outputs)
    bias : array-like of shape (n_outputs,), optional
    input_shape : tuple of int, optional
        Shape of one sample; its product must be ``n_features``. Default ``(n_features,)``.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})

    def __init__(
        self, weight: Any, bias: Any = None, input_shape: tuple[int, ...] | None = None
    ) -> None:
        self.weight = np.asarray(weight, dtype=np.float64)
        if self.weight.ndim != 2:
            raise ShapeError(
                f"weight must have shape (n_features, n_outputs); got {self.weight.shape}."
            )
        n_features, self.n_outputs = self.weight.shape
        self.bias = np.zeros(self.n_outputs) if bias is None else np.asarray(bias, dtype=np.float64)
        self.input_shape = tuple(input_shape) if input_shape is not None else (n_features,)
        if int(np.prod(self.input_shape)) != n_features:
            raise ShapeError(f"input_shape {self.input_shape} does not hold {n_features} features.")

    def predict(self, X: np.ndarray, backend: Backend | None = None) -> np.ndarray:
        flat = np.asarray(X).reshape(len(X), -1)
        if backend is None:
            return flat @ self.weight + self.bias
        return backend.matmul(flat, self.weight.astype(backend.dtype, copy=False)) + self.bias

    def gradient(
        self, X: np.ndarray, target: np.ndarray, backend: Backend | None = None
    ) -> np.ndarray:
        grads = self.weight[:, np.asarray(target)].T
        return grads.reshape((len(X), *self.input_shape)).astype(np.asarray(X).dtype)

    def __repr__(self) -> str:
        return f"LinearModel(n_features={self.weight.shape[0]}, n_outputs={self.n_outputs})"


def _fail(subject: str, message: str) -> None:
    raise ContractError(f"{subject}: {message}")


def _check_default_for(subject: str, default_for: Any) -> None:
    """``default_for`` maps roles of :data:`DEFAULT_ROLES` to integer ranks."""
    roles = sorted(DEFAULT_ROLES)
    if not isinstance(default_for, Mapping) or any(
        role not in DEFAULT_ROLES or isinstance(rank, bool) or not isinstance(rank, int)
        for role, rank in default_for.items()
    ):
        _fail(
            subject,
            f"'default_for' must map roles within {roles} to integer ranks; got {default_for!r}",
        )


def check_explainer(cls: type, *, options: dict[str, Any] | None = None, model: Any = None) -> None:
    """Check that ``cls`` keeps the explainer contract.

    Checks: it subclasses :class:`xai_core.Explainer`; ``name`` is a non-empty string;
    ``requires`` is a subset of the known capabilities; ``default_for`` maps known roles
    to integer ranks; the constructor takes keyword
    options only, does no work and stores each as an attribute; on a 3-output
    :class:`LinearModel` it returns an :class:`Explanation` of the right shapes, for the
    requested targets, with finite values and base values; a single row works; two
    runs with the same options give identical values; ``X`` is passed read-only and
    must not be written to; ``estimate_cost`` returns an :class:`xai_core.Cost` or ``None``. The class is run directly on a CPU (float64) runner, as
    :func:`xai_core.explain` would run it, so it need not be registered.

    Parameters
    ----------
    cls : type
        The explainer class (registered or not).
    options : dict, optional
        Options for the runs (e.g. a small ``n_samples`` to keep the check fast).
    model : Model, optional
        What to run on instead of the linear model, for methods that need more than its
        predictions and gradients (the hidden layers of a native network, say): it must
        take rows of 4 features and give 3 outputs.
    """
    subject = getattr(cls, "__name__", repr(cls))
    if not (inspect.isclass(cls) and issubclass(cls, Explainer)):
        _fail(subject, "must be a subclass of xai_core.Explainer")
    if not isinstance(cls.name, str) or not cls.name:
        _fail(subject, "must set a non-empty string 'name'")
    if not isinstance(cls.requires, frozenset) or not cls.requires <= CAPABILITIES:
        _fail(
            subject,
            f"'requires' must be a frozenset within {sorted(CAPABILITIES)}; got {cls.requires!r}",
        )
    _check_default_for(subject, cls.default_for)
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            _fail(subject, f"__init__ must list its options explicitly; got *{p.name}")
        if p.default is p.empty:
            _fail(subject, f"option {p.name!r} must have a default")
    options = dict(options or {})
    explainer = cls(**options)
    missing = [n for n in cls.option_names() if not hasattr(explainer, n)]
    if missing:
        _fail(subject, f"__init__ must store each option as an attribute; missing {missing}")

    rng = np.random.default_rng(0)
    linear = LinearModel(rng.normal(size=(4, 3)), rng.normal(size=3))
    model = linear if model is None else model
    X = rng.normal(size=(5, 4))
    target = np.array([0, 1, 2, 0, 1])
    from xai_core.backends.cpu import CPUBackend
    from xai_core.model.runner import ModelRunner

    runner = ModelRunner(model, CPUBackend(dtype="float64"))
    for capability in sorted(cls.requires):
        runner.require(capability)

    def run(rows: np.ndarray, tgt: np.ndarray) -> Explanation:
        checked = runner.check_X(rows)
        checked.setflags(write=False)  # as explain() passes the caller's rows
        try:
            return cls(**options).explain(runner, checked, tgt)
        except ValueError as exc:
            if "read-only" in str(exc):
                _fail(subject, f"explain must not write to X (it is read-only): {exc}")
            raise

    from xai_core.attribution.cost import explainer_cost

    try:
        explainer_cost(cls(**options), runner, X)
    except ContractError as exc:
        _fail(subject, str(exc))
    e = run(X, target)
    if not isinstance(e, Explanation):
        _fail(subject, f"explain must return an Explanation; got {type(e).__name__}")
    if e.values.shape != X.shape:
        _fail(subject, f"values must have shape {X.shape}; got {e.values.shape}")
    if np.shape(e.base_values) != (len(X),):
        _fail(subject, f"base_values must have shape ({len(X)},); got {np.shape(e.base_values)}")
    if not np.array_equal(e.target, target):
        _fail(subject, f"target must be the requested {target.tolist()}; got {e.target.tolist()}")
    if not (np.isfinite(e.values).all() and np.isfinite(e.base_values).all()):
        _fail(subject, "values and base_values must be finite on a linear model")
    if e.method not in ("", cls.name):
        _fail(
            subject,
            f"method must be {cls.name!r} (or left for explain() to fill); got {e.method!r}",
        )
    if run(X[:1], target[:1]).values.shape != (1, 4):
        _fail(subject, "a single row must give values of shape (1, 4)")
    if not np.array_equal(run(X, target).values, e.values):
        _fail(subject, "two runs with the same options (and seed) must give identical values")


def check_backend(backend: Backend | type) -> None:
    """Check that ``backend`` keeps the backend protocol.

    Checks: a non-empty ``name``; ``describe()`` gives name and numerics; counters hold
    the common keys, start at zero after ``reset_counters()`` and grow with work;
    ``matmul`` gives shape (M, N) and agrees with float64 within the class attribute
    ``matmul_rtol`` (exactly for int8 backends, which get int8 operands) on shapes that
    do not divide any tile; results are deterministic; ``batched_matmul`` equals a loop of ``matmul`` and counts
    like it; ``matmul_into`` writes ``matmul``'s product and counts like it; a backend whose
    ``exact_operands`` is True multiplies within its dtype's rounding; ``elementwise`` and
    ``reduce`` work.

    A native model runs on it through a :class:`~xai_core.ModelRunner` given the
    instance (no registration needed) and predicts what float64 does.

    Parameters
    ----------
    backend : Backend or Backend subclass
        An instance, e.g. ``xai.get_backend("tpu")`` or ``MyBackend(dtype="float64")``, or
        a class, built with its default settings.
    """
    subject = f"backend {getattr(backend, 'name', backend)!r}"
    if inspect.isclass(backend):
        if not issubclass(backend, Backend):
            _fail(subject, "must be a subclass of xai_core.Backend")
        try:
            backend = backend()
        except TypeError as exc:
            _fail(
                subject,
                f"the class must build with its default settings (or pass an instance): {exc}",
            )
    if not isinstance(backend, Backend):
        _fail(subject, "must be an instance of xai_core.Backend")
    if not isinstance(backend.name, str) or not backend.name:
        _fail(subject, "must set a non-empty string 'name'")
    info = backend.describe()
    if info.get("name") != backend.name or "numerics" not in info:
        _fail(subject, f"describe() must include its name and 'numerics'; got {info!r}")
    backend.reset_counters()
    counters = backend.counters
    missing = [k for k in Backend.COMMON_COUNTERS if k not in counters]
    if missing:
        _fail(subject, f"counters must include {missing}")
    if any(v != 0 for v in counters.values()):
        _fail(subject, f"reset_counters() must zero every counter; got {counters}")

    rng = np.random.default_rng(0)
    rtol = float(getattr(backend, "matmul_rtol", 1e-5))
    for m, k, n in [(1, 1, 1), (3, 5, 7), (17, 33, 9), (130, 70, 129)]:
        if backend.requires_quantized:
            a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
            b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
        else:
            a = rng.normal(size=(m, k)).astype(np.float32)
            b = rng.normal(size=(k, n)).astype(np.float32)
        before = backend.counters
        c = np.asarray(backend.matmul(a, b))
        after = backend.counters
        exact = a.astype(np.float64) @ b.astype(np.float64)
        if c.shape != (m, n):
            _fail(
                subject,
                f"matmul of ({m}, {k}) by ({k}, {n}) must have shape ({m}, {n}); got {c.shape}",
            )
        if backend.requires_quantized:
            if not np.array_equal(c.astype(np.int64), exact.astype(np.int64)):
                _fail(subject, "int8 matmul must be exact")
        else:
            scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
            err = np.max(np.abs(c - exact) / np.maximum(scale, 1e-30))
            if not err <= rtol:
                _fail(
                    subject,
                    f"matmul differs from float64 by {err:.3g} (relative), over matmul_rtol={rtol}",
                )
        if after["macs"] - before["macs"] != m * k * n:
            _fail(
                subject,
                f"macs must grow by M*K*N={m * k * n}; grew by {after['macs'] - before['macs']}",
            )
        if after["matmuls"] - before["matmuls"] != 1:
            _fail(subject, "matmuls must count one per call")
        if not after["cycles"] > before["cycles"]:
            _fail(subject, "cycles must grow with a matmul")
        if not np.array_equal(c, np.asarray(backend.matmul(a, b))):
            _fail(subject, "matmul must be deterministic")
    if not backend.requires_quantized:
        x = rng.normal(size=(4, 6)).astype(np.float32)
        out = backend.elementwise(np.maximum, x, np.float32(0))
        if np.asarray(out).shape != x.shape or not np.allclose(
            out, np.maximum(x, 0), rtol=1e-2, atol=1e-2
        ):
            _fail(subject, "elementwise(np.maximum, x, 0) must be ReLU")
        red = backend.reduce(np.sum, x, axis=1)
        if np.asarray(red).shape != (4,) or not np.allclose(
            red, x.sum(axis=1), rtol=1e-2, atol=1e-2
        ):
            _fail(subject, "reduce(np.sum, x, axis=1) must sum the rows")
        _check_batched(subject, backend, rng, rtol)
        _check_matmul_into(subject, backend, rng)
        _check_runner(subject, backend, rng, rtol)
    backend.reset_counters()
    if any(v != 0 for v in backend.counters.values()):
        _fail(subject, "reset_counters() must zero every counter after work")


def _check_matmul_into(subject: str, backend: Backend, rng: np.random.Generator) -> None:
    """``matmul_into`` writes ``matmul``'s product into ``out`` and counts like it; a backend
    that says ``exact_operands`` multiplies within its dtype's rounding."""
    if not isinstance(backend.exact_operands, bool):
        _fail(subject, f"exact_operands must be a bool; got {backend.exact_operands!r}")
    a = rng.normal(size=(9, 40)).astype(backend.dtype)
    b = rng.normal(size=(40, 11)).astype(backend.dtype)
    before = backend.counters
    want = np.asarray(backend.matmul(a, b))
    mid = backend.counters
    out = np.empty((9, 11), dtype=backend.dtype)
    got = backend.matmul_into(a, b, out)
    after = backend.counters
    if got is not out or not np.array_equal(out, want):
        _fail(subject, "matmul_into(a, b, out) must write matmul(a, b) into out and return out")
    for key in ("macs", "matmuls"):
        if after[key] - mid[key] != mid[key] - before[key]:
            _fail(subject, f"matmul_into must count {key!r} as matmul does")
    if backend.exact_operands:
        exact = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        err = np.max(np.abs(want - exact) / scale)
        bound = 40 * float(np.finfo(backend.dtype).eps)
        if not err <= bound:
            _fail(
                subject,
                f"exact_operands is True, but matmul differs from float64 by {err:.3g} "
                f"(relative), over {bound:.3g}: its operands are rounded",
            )


def _check_batched(subject: str, backend: Backend, rng: np.random.Generator, rtol: float) -> None:
    """``batched_matmul`` gives each ``matmul`` of the stack and counts one matmul per product."""
    a = rng.normal(size=(3, 17, 9)).astype(np.float32)
    b = rng.normal(size=(3, 9, 5)).astype(np.float32)
    before = backend.counters
    c = np.asarray(backend.batched_matmul(a, b))
    after = backend.counters
    want = np.stack([np.asarray(backend.matmul(x, y)) for x, y in zip(a, b)])
    if c.shape != want.shape or not np.allclose(c, want, rtol=rtol, atol=rtol):
        _fail(subject, "batched_matmul(a, b) must equal matmul(a[i], b[i]) for each i")
    if (
        after["macs"] - before["macs"] != 3 * 17 * 9 * 5
        or after["matmuls"] - before["matmuls"] != 3
    ):
        _fail(subject, "batched_matmul must count the macs of, and one matmul per, product")


def _check_runner(subject: str, backend: Backend, rng: np.random.Generator, rtol: float) -> None:
    """A native model predicts on ``backend`` through a runner, as it does in float64."""
    from xai_core.model.runner import ModelRunner

    model = LinearModel(rng.normal(size=(6, 3)), rng.normal(size=3))
    X = rng.normal(size=(9, 6))
    try:
        out = np.asarray(ModelRunner(model, backend).predict(X), dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - the contract: a runner takes the instance
        _fail(
            subject, f"a ModelRunner given the instance must predict: {type(exc).__name__}: {exc}"
        )
    exact = X @ model.weight + model.bias
    scale = np.abs(X) @ np.abs(model.weight) + np.abs(model.bias)
    err = float(np.max(np.abs(out - exact) / np.maximum(scale, 1e-30)))
    if out.shape != exact.shape or not err <= rtol:
        _fail(
            subject,
            f"a model on a runner must predict as float64 does within {rtol}; got {err:.3g}",
        )


#: A name no report may show unescaped: it closes tags, opens scripts and handlers, and
#: breaks out of attributes and JSON blocks.
HOSTILE = "</script><script>alert('xai')</script><img src=x onerror=alert(1)>\"'&amp;<!--"

_URL_ATTRIBUTES = ("src", "href", "xlink:href", "action", "formaction", "poster", "srcset", "data")
_EXTERNAL = re.compile(r"(?i)(\bhttps?:|\bftp:|url\(\s*['\"]?(?!data:|#))")
_FORBIDDEN_TAGS = ("link", "iframe", "object", "embed", "base", "frame", "meta", "form")


class _Fragment(HTMLParser):
    """Every start tag with its attributes, and the text and type of every script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[str, str]] = []
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag == "script":
            self._script = attributes.get("type", "")
            self.scripts.append((self._script, ""))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            kind, text = self.scripts[-1]
            self.scripts[-1] = (kind, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None


def _render(subject: str, section: Any, result: Any, seed: int | None) -> str:
    from xai_core.report import id_scope

    with id_scope(seed):
        try:
            html = section.render(result)
        except Exception as exc:  # noqa: BLE001 - the contract: render what the section handles
            _fail(subject, f"render raised {type(exc).__name__}: {exc}")
    if not isinstance(html, str):
        _fail(subject, f"render must return an HTML string; got {type(html).__name__}")
    return html


def _check_fragment(subject: str, html: str) -> list[str]:
    """Self-contained and inert; returns the fragment's ids."""
    page = _Fragment()
    page.feed(html)
    page.close()
    ids = [a["id"] for _, a in page.tags if "id" in a]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        _fail(subject, f"element ids must be unique within a render; repeated: {repeated[:5]}")
    for tag, attrs in page.tags:
        if tag in _FORBIDDEN_TAGS:
            _fail(subject, f"a fragment must not hold a <{tag}> element (self-contained, offline)")
        handlers = [k for k in attrs if k.startswith("on")]
        if handlers:
            _fail(subject, f"<{tag}> must not carry event-handler attributes {handlers}")
        for key in _URL_ATTRIBUTES:
            value = attrs.get(key, "").strip()
            if value and not value.startswith(("data:", "#")):
                _fail(
                    subject, f"<{tag} {key}={value[:60]!r}> must be a data: URI or a #fragment link"
                )
            if value.startswith("#") and value[1:] and value[1:] not in ids:
                _fail(subject, f"<{tag} {key}={value!r}> links to an id the fragment does not have")
        if _EXTERNAL.search(attrs.get("style", "")):
            _fail(subject, f"<{tag} style=...> must not load anything from outside")
    for kind, text in page.scripts:
        if kind == "text/html":  # a live control's template: inert HTML the script puts in place
            _check_fragment(subject, text)
            continue
        if kind != "application/json":
            _fail(
                subject,
                'a fragment may hold data in <script type="application/json"> and templates '
                'in <script type="text/html"> only; executable JavaScript goes in '
                "ReportSection.script",
            )
        try:
            json.loads(text)
        except ValueError as exc:
            _fail(subject, f'a <script type="application/json"> block must hold JSON: {exc}')
    if _EXTERNAL.search("".join(t for t in re.findall(r"<style[^>]*>(.*?)</style>", html, re.S))):
        _fail(subject, "a <style> block must not load anything from outside")
    return ids


def check_report_section(section: Any, make_result: Any, *, seed: int = 0) -> None:
    """Check that a report section keeps the contract, before it is registered.

    Checks: ``section`` is a :class:`~xai_core.ReportSection` with a name and a result
    type that the results match; rendering is deterministic under a seed
    (``Report(seed=)``: the same bytes twice) and gives fresh ids without one (two
    renders in one notebook page never share an id); every user-supplied string is
    escaped (a result built around :data:`HOSTILE` leaves no tag, script or handler of
    it in the HTML); the fragment is self-contained (images as ``data:`` URIs, no
    external URL in any attribute or style, links only to its own ids, ids unique,
    no ``<link>``/``<iframe>``/... elements, data only in ``<script
    type="application/json">`` blocks that parse as JSON, and ``<script type="text/html">``
    templates of live controls held to the same rules); the section's ``script``
    loads nothing from outside.

    Parameters
    ----------
    section : ReportSection
        The section, as the plugin would register it.
    make_result : callable
        ``make_result(name: str) -> result``: a result the section renders, with ``name``
        in every user-supplied string it shows (feature, class and column names, labels,
        titles).
    seed : int, default=0
        The report seed of the determinism check.
    """
    from xai_core.plugin.records import ReportSection

    subject = f"report section {getattr(section, 'name', section)!r}"
    if not isinstance(section, ReportSection):
        _fail(subject, "must be an xai_core.ReportSection")
    if not isinstance(section.name, str) or not section.name:
        _fail(subject, "must have a non-empty string name")
    if not isinstance(section.script, str) or _EXTERNAL.search(section.script):
        _fail(subject, "script must be a string of JavaScript that loads nothing from outside")
    if re.search(
        r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts)\b", section.script
    ):
        _fail(subject, "script must not reach the network")

    plain_result = make_result("feature a")
    if not section.handles(plain_result):
        _fail(subject, f"must handle the result it is given ({type(plain_result).__qualname__})")
    first = _render(subject, section, plain_result, seed)
    if _render(subject, section, plain_result, seed) != first:
        _fail(
            subject,
            f"two renders under seed {seed} must be the same bytes (use xai_core.report.new_id)",
        )
    ids = _check_fragment(subject, first)
    if ids:
        other = _check_fragment(subject, _render(subject, section, plain_result, None))
        again = _check_fragment(subject, _render(subject, section, plain_result, None))
        shared = sorted(set(other) & set(again))
        if shared:
            _fail(subject, f"two unseeded renders must not share ids; both have {shared[:3]}")

    hostile = make_result(HOSTILE)
    if not section.handles(hostile):
        _fail(subject, f"must handle the result it is given ({type(hostile).__qualname__})")
    html = _render(subject, section, hostile, seed)
    for raw in ("<script>alert(", "<img src=x", "<!--"):
        if raw in html:
            _fail(subject, f"user-supplied text must be escaped; found {raw!r} in the HTML")
    _check_fragment(subject, html)


def litert_reference_outputs(path: Any, Q: np.ndarray) -> np.ndarray:
    """LiteRT's reference kernels on a ``.tflite`` file, row by row: the oracle of int8 kernels.

    Parameters
    ----------
    path : path-like
        A ``.tflite`` file of one input and one output, batch 1.
    Q : ndarray of shape (n_samples, *input_shape)
        Inputs of the file's input type (int8 for a quantised file).

    Returns
    -------
    ndarray of shape (n_samples, *output_shape)
        The first output, each row from its own invocation of LiteRT's ``BUILTIN_REF``
        resolver (the reference kernels, not the optimised ones).
    """
    from xai_core.optional import require

    litert = require("ai_edge_litert.interpreter", extra="tflite", need="LiteRT's kernels")
    it = litert.Interpreter(
        str(path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
    )
    it.allocate_tensors()
    inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    rows = []
    for row in Q:
        it.set_tensor(inp, row[None])
        it.invoke()
        rows.append(it.get_tensor(out).copy())
    return np.concatenate(rows)
