"""Contract checks for explainers and backends, for first- and third-party plugins alike.

Call them from your plugin's tests::

    from xai_core.testing import check_backend, check_explainer

    def test_contract():
        check_explainer(MyExplainer)
        check_backend(MyBackend())

Each check raises :class:`xai_core.errors.ContractError` (an ``AssertionError``) naming
what is broken.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np

from xai_core.attribution.explainer import CAPABILITIES, Explainer, explain
from xai_core.attribution.explanation import Explanation
from xai_core.backends.base import Backend
from xai_core.errors import ContractError, ShapeError, ValidationError
from xai_core.model.base import Model

__all__ = ["LinearModel", "check_backend", "check_explainer"]


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


def check_explainer(cls: type, *, options: dict[str, Any] | None = None) -> None:
    """Check that ``cls`` keeps the explainer contract.

    Checks: it subclasses :class:`xai_core.Explainer`; ``name`` is a non-empty string;
    ``requires`` is a subset of the known capabilities; the constructor takes keyword
    options only, does no work and stores each as an attribute; on a 3-output
    :class:`LinearModel` it returns an :class:`Explanation` of the right shapes, for the
    requested targets, with finite values and base values; a single row works; two
    runs with the same options give identical values.

    Parameters
    ----------
    cls : type
        The explainer class.
    options : dict, optional
        Options for the runs (e.g. a small ``n_samples`` to keep the check fast).
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
    model = LinearModel(rng.normal(size=(4, 3)), rng.normal(size=3))
    X = rng.normal(size=(5, 4))
    target = np.array([0, 1, 2, 0, 1])
    from xai_core.model.runner import get_backend

    def run(rows: np.ndarray, tgt: np.ndarray) -> Explanation:
        return explain(
            model,
            rows,
            method=cls.name,
            backend=get_backend("cpu", dtype="float64"),
            target=tgt,
            **options,
        )

    from xai_core.plugin.manager import get_registry

    if get_registry().explainers.get(cls.name) is not cls:
        _fail(
            subject,
            f"is not the explainer registered as {cls.name!r}; register it through a plugin",
        )
    e = run(X, target)
    if not isinstance(e, Explanation):
        _fail(subject, f"explain must return an Explanation; got {type(e).__name__}")
    if e.values.shape != X.shape:
        _fail(subject, f"values must have shape {X.shape}; got {e.values.shape}")
    if not np.array_equal(e.target, target):
        _fail(subject, f"target must be the requested {target.tolist()}; got {e.target.tolist()}")
    if not (np.isfinite(e.values).all() and np.isfinite(e.base_values).all()):
        _fail(subject, "values and base_values must be finite on a linear model")
    if e.method != cls.name:
        _fail(subject, f"method must be {cls.name!r}; got {e.method!r}")
    if run(X[:1], target[:1]).values.shape != (1, 4):
        _fail(subject, "a single row must give values of shape (1, 4)")
    if not np.array_equal(run(X, target).values, e.values):
        _fail(subject, "two runs with the same options (and seed) must give identical values")
    try:
        run(X[:, :3], target)
    except (ShapeError, ValidationError):
        pass
    else:
        _fail(subject, "an X with the wrong number of features must be rejected")


def check_backend(backend: Backend) -> None:
    """Check that ``backend`` keeps the backend protocol.

    Checks: a non-empty ``name``; ``describe()`` gives name and numerics; counters hold
    the common keys, start at zero after ``reset_counters()`` and grow with work;
    ``matmul`` gives shape (M, N) and agrees with float64 within the class attribute
    ``matmul_rtol`` (exactly for int8 backends, which get int8 operands) on shapes that
    do not divide any tile; results are deterministic; ``elementwise`` and ``reduce``
    work.

    Parameters
    ----------
    backend : Backend
        An instance, e.g. ``xai.get_backend("tpu")``.
    """
    subject = f"backend {getattr(backend, 'name', backend)!r}"
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
    backend.reset_counters()
    if any(v != 0 for v in backend.counters.values()):
        _fail(subject, "reset_counters() must zero every counter after work")
