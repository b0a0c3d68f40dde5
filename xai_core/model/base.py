"""The model interface the runner and explainers use, and black-box models from any callable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from xai_core.errors import CapabilityError, ShapeError, ValidationError
from xai_core.model.frameworks import host_function

__all__ = ["STRAIGHT_THROUGH_NOTE", "Model", "BlackBoxModel", "as_model", "gradients_on"]

#: What ``meta["gradient"]`` of an explanation says when its gradients were straight-through
#: estimates (a model with the ``"straight_through"`` capability).
STRAIGHT_THROUGH_NOTE = "straight-through (fake-quantised float backward)"


def gradients_on(model: Any, backend: Any) -> bool:
    """Whether ``model``'s gradients can be computed with ``backend``.

    A model with ``"gradient"`` needs a backend that runs backward passes; one that also
    declares ``"straight_through"`` (an int8 model, :mod:`xai_core.int8.ste`) runs its
    forward pass on any backend, the Edge TPU too, and its float backward on the host.
    """
    caps = model.capabilities
    if "gradient" not in caps:
        return False
    return bool(backend.supports_gradients) or "straight_through" in caps


class Model:
    """What every model offers the runner.

    Native networks (:class:`xai_core.nn.Sequential`) add gradients and activations;
    black boxes only predict.

    Attributes
    ----------
    capabilities : frozenset of str
        Subset of ``{"predict", "gradient", "activations", "straight_through"}``;
        ``"straight_through"``: the gradients are straight-through estimates (an int8
        model's, :mod:`xai_core.int8.ste`), available on inference-only backends too.
    input_shape : tuple of int or None
        Shape of one sample, ``None`` when unknown.
    n_outputs : int or None
        Width of the output, ``None`` until known.
    output_names : tuple of str or None
        Names of the outputs (class names), when known.
    is_quantized : bool
        Whether the model is an int8 model that may run on the Edge TPU.
    allow_nan : bool
        Whether the model takes missing values (NaN) in its input and handles them itself
        (histogram gradient boosting, XGBoost, LightGBM, CatBoost): rows with NaN are then
        explained by the methods that handle them (:attr:`Explainer.handles_missing`).
        Infinity is refused either way.
    runs_on_backend : bool
        Whether the model's own arithmetic runs on the backend it is given (native
        networks, TFLite models, models with gradients); a black box computes on the host
        whatever the backend.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict"})
    input_shape: tuple[int, ...] | None = None
    n_outputs: int | None = None
    output_names: tuple[str, ...] | None = None
    is_quantized: bool = False
    allow_nan: bool = False

    @property
    def runs_on_backend(self) -> bool:
        """Models with gradients, and int8 models, compute on their backend by default."""
        return "gradient" in self.capabilities or self.is_quantized

    def predict(self, X: np.ndarray, backend: Any = None) -> np.ndarray:
        """Outputs of shape (n_samples, n_outputs) for ``X`` of shape (n_samples, *input_shape)."""
        raise NotImplementedError

    def predict_checked(self, X: np.ndarray, backend: Any) -> np.ndarray:
        """:meth:`predict` for ``X`` the runner has already validated (shape, dtype, finite).

        Models whose ``predict`` validates its input override this to skip a second check.
        """
        return self.predict(X, backend=backend)

    def gradient(self, X: np.ndarray, target: np.ndarray, backend: Any = None) -> np.ndarray:
        """d output[target] / d X, of the shape of ``X``."""
        raise CapabilityError(
            f"{type(self).__name__} is a black box: it has no gradients. Use a native network "
            "(xai.nn.Sequential or xai.from_sklearn) or a method that needs only predictions."
        )

    def activations(self, X: np.ndarray, layer: Any, backend: Any = None) -> np.ndarray:
        """Outputs of ``layer`` (index or name) for ``X``."""
        raise CapabilityError(f"{type(self).__name__} is a black box: it has no layers to read.")

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names of the model's outputs; models with several override it and :meth:`with_output`."""
        return ("output",)

    def with_output(self, output: str | int) -> Model:
        """The model whose one output is ``output`` (a name in :attr:`outputs`, or its index).

        A model with one output returns itself for its name, ``0`` or ``-1``.
        """
        outputs = self.outputs
        index = not isinstance(output, bool) and isinstance(output, (int, np.integer))
        if len(outputs) == 1 and (output in outputs or (index and output in (0, -1))):
            return self
        raise CapabilityError(
            f"output={output!r} is not one of the outputs of this {type(self).__name__}: "
            f"{list(outputs)}."
        )


class BlackBoxModel(Model):
    """A prediction function of a batch, seen as a model.

    Parameters
    ----------
    fn : callable, torch.nn.Module or keras.Model
        Maps an array of shape (n_samples, *input_shape) to outputs of shape
        (n_samples,) or (n_samples, n_outputs). A torch module is called on float32
        tensors in eval mode without gradients (its mode is restored after each call), a
        Keras model through ``predict(X, verbose=0)``: this is how to explain either as a
        black box, predictions only, on the host (``xai.explain(xai.BlackBoxModel(module),
        X, method="shap")``) instead of importing it as :func:`xai_core.explain` does.
    input_shape : tuple of int, optional
        Shape of one sample, if known.
    output_names : sequence of str, optional
        Names of the outputs.
    feature_names : sequence of str, optional
        When given, ``fn`` receives a pandas DataFrame with these columns (for estimators
        fitted on DataFrames).
    name : str, optional
        Shown in reprs and reports.
    allow_nan : bool, default=False
        Whether ``fn`` handles missing values (NaN) in its input. An estimator passed to
        :func:`as_model` declares it through its scikit-learn tags.

    Attributes
    ----------
    estimator : object or None
        The fitted estimator whose bound method ``fn`` is (``rf.predict_proba`` gives
        ``rf``), for methods that read its structure (trees, coefficients); else ``None``.
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        input_shape: Sequence[int] | None = None,
        output_names: Sequence[str] | None = None,
        feature_names: Sequence[str] | None = None,
        name: str | None = None,
        allow_nan: bool = False,
    ) -> None:
        framework = host_function(fn)
        if framework is None and not callable(fn):
            raise ValidationError(f"fn must be callable; got {type(fn).__name__}.")
        self.fn = framework or fn
        self.input_shape = tuple(input_shape) if input_shape is not None else None
        self.output_names = (
            tuple(str(n) for n in output_names) if output_names is not None else None
        )
        self.n_outputs = len(self.output_names) if self.output_names is not None else None
        self.feature_names = tuple(feature_names) if feature_names is not None else None
        self.name = name or (
            type(fn).__name__ if framework else getattr(fn, "__qualname__", type(fn).__name__)
        )
        owner = getattr(fn, "__self__", None)
        self.estimator = owner if hasattr(owner, "fit") else None
        self.allow_nan = bool(allow_nan)

    def predict(self, X: np.ndarray, backend: Any = None) -> np.ndarray:
        arg = X
        if self.feature_names is not None:
            import pandas as pd

            arg = pd.DataFrame(np.asarray(X).reshape(len(X), -1), columns=list(self.feature_names))
        out = np.asarray(self.fn(arg), dtype=np.float64)
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != len(X):
            raise ShapeError(
                f"model {self.name!r} must return shape (n_samples,) or (n_samples, n_outputs) "
                f"for {len(X)} samples; got shape {out.shape}."
            )
        if self.n_outputs is None:
            self.n_outputs = out.shape[1]
        elif out.shape[1] != self.n_outputs:
            raise ShapeError(
                f"model {self.name!r} returned {out.shape[1]} outputs; earlier calls returned "
                f"{self.n_outputs}."
            )
        return out

    def __repr__(self) -> str:
        return f"BlackBoxModel({self.name})"


def as_model(obj: Any, *, input_shape: Sequence[int] | None = None) -> Model:
    """Return ``obj`` as a :class:`Model`: a native one as it is, anything else a black box.

    :func:`xai_core.explain` and the other entry points call
    :func:`xai_core.import_model` instead, which imports torch modules, Keras models and
    model files as native networks and hands everything else to this function.

    Parameters
    ----------
    obj : Model, fitted estimator, torch.nn.Module, keras.Model or callable
        A native network is returned as it is. A torch module or Keras model becomes a
        black box (:class:`BlackBoxModel`, predictions on the host). A fitted
        scikit-learn-style estimator becomes a black box over its ``predict_proba``
        (classifiers) or ``predict``. Any other callable of a batch becomes a black box.
    input_shape : tuple of int, optional
        Shape of one sample, for black boxes.

    Returns
    -------
    Model
    """
    if isinstance(obj, Model):
        return obj
    if host_function(obj) is not None:
        return BlackBoxModel(obj, input_shape=input_shape)
    if hasattr(obj, "fit") and (hasattr(obj, "predict") or hasattr(obj, "predict_proba")):
        _check_fitted(obj)
        names = getattr(obj, "feature_names_in_", None)
        shape = input_shape
        if shape is None and getattr(obj, "n_features_in_", None) is not None:
            shape = (int(obj.n_features_in_),)
        kind = {"feature_names": names, "name": type(obj).__name__}
        kind["allow_nan"] = _handles_missing(obj)
        if hasattr(obj, "predict_proba"):
            classes = getattr(obj, "classes_", None)
            return BlackBoxModel(
                obj.predict_proba,
                input_shape=shape,
                output_names=[str(c) for c in classes] if classes is not None else None,
                **kind,
            )
        return BlackBoxModel(obj.predict, input_shape=shape, **kind)
    if callable(obj):
        return BlackBoxModel(obj, input_shape=input_shape)
    raise CapabilityError(
        "model must be an xai_core Model, a fitted estimator with predict or predict_proba, "
        f"or a function of a batch; got {type(obj).__name__}."
    )


def _handles_missing(estimator: Any) -> bool:
    """Whether a fitted estimator's scikit-learn tags say it takes NaN in its input."""
    try:
        from sklearn.utils import get_tags

        return bool(get_tags(estimator).input_tags.allow_nan)
    except Exception:  # noqa: BLE001 - not a scikit-learn estimator, or tags it cannot read
        return False


def _check_fitted(estimator: Any) -> None:
    try:
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return
    try:
        check_is_fitted(estimator)
    except NotFittedError as exc:
        raise ValidationError(
            f"model {type(estimator).__name__} is not fitted: call fit first."
        ) from exc
    except TypeError:  # not a scikit-learn estimator; trust it
        pass
