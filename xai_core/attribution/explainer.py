"""Explainer: the base class of every attribution method, and ``explain()`` which dispatches to them."""

from __future__ import annotations

import dataclasses
import inspect
import time
from typing import Any, ClassVar

import numpy as np

from xai_core.attribution.explanation import Explanation
from xai_core.errors import CapabilityError, UnknownNameError, ValidationError
from xai_core.model.runner import ModelRunner, get_backend

__all__ = ["Explainer", "explain", "list_explainers", "CAPABILITIES"]

#: What a model on a backend can offer; explainers declare the subset they need.
CAPABILITIES = frozenset({"predict", "gradient", "activations"})


class Explainer:
    """Base class of attribution methods.

    Subclasses set :attr:`name` and :attr:`requires`, take their options as keyword
    arguments of ``__init__`` (stored, not acted on) and implement :meth:`explain`.

    Attributes
    ----------
    name : str
        The ``method=`` string.
    requires : frozenset of str
        Capabilities needed, from ``{"predict", "gradient", "activations"}``; checked by
        :func:`explain` before any work.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})

    def __init__(self) -> None:
        """An explainer without options."""

    @classmethod
    def option_names(cls) -> list[str]:
        """The keyword arguments the constructor accepts."""
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def get_options(self) -> dict[str, Any]:
        """The options this explainer was built with (stored as attributes of the same name)."""
        return {name: getattr(self, name) for name in self.option_names() if hasattr(self, name)}

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Attribute ``runner``'s output ``target`` of each row of ``X`` to its inputs.

        Parameters
        ----------
        runner : ModelRunner
            The model on its backend; use its ``predict``/``gradient`` in large batches.
        X : ndarray of shape (n_samples, *input_shape)
            Validated inputs.
        target : ndarray of int64 of shape (n_samples,)
            Output index per row.

        Returns
        -------
        Explanation
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.get_options().items())
        return f"{type(self).__name__}({opts})"


def list_explainers() -> list[str]:
    """Names of the registered explainers, sorted."""
    from xai_core.plugin.manager import get_registry

    return sorted(get_registry().explainers)


def explain(
    model: Any,
    X: Any,
    method: str = "ig",
    backend: Any = "cpu",
    target: Any = None,
    *,
    feature_names: Any = None,
    batch_size: int = 4096,
    executor: Any = None,
    chunk_size: int | None = None,
    **options: Any,
) -> Explanation:
    """Explain ``model``'s outputs on ``X`` with the registered method ``method``.

    Parameters
    ----------
    model : Model, ModelRunner, estimator or callable
        Anything :func:`xai_core.as_model` accepts, or a runner (then ``backend`` is
        the runner's).
    X : array-like of shape (n_samples, *input_shape)
        Rows to explain.
    method : str, default="ig"
        A registered explainer (:func:`list_explainers`).
    backend : str or Backend, default="cpu"
        Where the model runs.
    target : int or array-like of shape (n_samples,), optional
        Output to explain per row; by default the predicted class (the only output
        for single-output models).
    feature_names : sequence of str, optional
        One name per feature; taken from a DataFrame's columns when ``X`` is one.
    batch_size : int, default=4096
        Rows per model call.
    executor : concurrent.futures.Executor, distributed.Client or "processes", optional
        Explain the rows in chunks on this executor (``"processes"``: a process pool over
        all local cores); see :mod:`xai_core.attribution.parallel`. The result equals the serial run
        with the same ``chunk_size`` and seed.
    chunk_size : int, optional
        Rows per chunk; each chunk gets a seed derived from ``seed`` and its index. Given
        without ``executor``, the chunks run one after the other here. Neither given: no
        chunks.
    **options
        Options of the method; an unknown one is an error that lists the valid ones.

    Returns
    -------
    Explanation
    """
    from xai_core.plugin.manager import get_registry

    chunked = executor is not None or chunk_size is not None
    if chunked:
        from xai_core.attribution.parallel import check_parallel, explain_chunked

        check_parallel(executor, chunk_size)
    cls = get_registry().explainer(method)
    valid = cls.option_names()
    for key in options:
        if key not in valid:
            raise UnknownNameError(f"option of method {method!r}", key, valid)
    explainer = cls(**options)
    if isinstance(model, ModelRunner):
        runner = model
    else:
        backend = get_backend(backend)
        if "gradient" in cls.requires and not backend.supports_gradients:
            raise CapabilityError(
                f"method {method!r} needs gradients, and the {backend.name!r} backend is inference "
                f"only; use one of: {', '.join(ModelRunner.backends_with('gradient'))}."
            )
        runner = ModelRunner(model, backend, batch_size=batch_size)
    for capability in sorted(cls.requires):
        runner.require(capability)
    if feature_names is None and hasattr(X, "columns"):
        feature_names = [str(c) for c in X.columns]
    if feature_names is None:
        feature_names = getattr(runner.model, "feature_names", None)
    X = runner.check_X(X)
    n_features = int(np.prod(X.shape[1:]))
    if feature_names is not None and len(feature_names) != n_features:
        raise ValidationError(
            f"feature_names must have {n_features} names, one per feature; got {len(feature_names)}."
        )
    target = resolve_target(runner, X, target)
    if chunked:
        return explain_chunked(
            runner,
            X,
            target,
            method=cls.name,
            options=options,
            feature_names=feature_names,
            executor=executor,
            chunk_size=chunk_size,
        )
    start = time.perf_counter()
    result = explainer.explain(runner, X, target)
    seconds = time.perf_counter() - start
    meta = {"seconds": seconds, "options": explainer.get_options(), **result.meta}
    image_shape = getattr(runner.model, "image_shape", None)
    if image_shape is not None and "image_shape" not in meta:
        meta["image_shape"] = tuple(image_shape)
    return dataclasses.replace(
        result,
        data=result.data if result.data is not None else X,
        feature_names=result.feature_names or feature_names,
        output_names=result.output_names or runner.model.output_names,
        method=result.method or cls.name,
        backend=result.backend or runner.backend.name,
        meta=meta,
    )


def resolve_target(runner: ModelRunner, X: np.ndarray, target: Any) -> np.ndarray:
    """Output index per row: ``target`` checked, or the predicted class by default.

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
    """
    from xai_core.validation import check_target

    if target is None:
        out = runner.predict(X)
        return (
            np.argmax(out, axis=1).astype(np.int64)
            if out.shape[1] > 1
            else np.zeros(len(X), np.int64)
        )
    n_outputs = runner.n_outputs
    if n_outputs is None:
        n_outputs = runner.predict(X[:1]).shape[1]
    return check_target(target, len(X), n_outputs)
