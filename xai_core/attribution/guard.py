"""Model outputs checked where they enter a method: NaN or infinity is an error naming the rows.

A black box that returns NaN for some inputs would otherwise give NaN attributions (or a
target silently taken as output 0, ``argmax`` of NaN) with no word said. The core checks
every model output an explainer receives, once, here: :func:`xai_core.explain` hands each
explainer a :class:`GuardedRunner`, whose ``predict`` / ``gradient`` (and their
``_validated`` forms) raise :class:`~xai_core.errors.ModelOutputError` on a non-finite value.
The what-if tool checks its model outputs with :func:`check_outputs` the same way.

The error names the rows: the rows of the caller's data whose own outputs are not finite
when there are any (the model is evaluated once more on the explained rows to find them,
on the error path only), else the inputs of the failing call (masked samples,
perturbations, path points) and the explained rows they were built from.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import ModelOutputError
from xai_core.model.runner import ModelRunner

__all__ = ["GuardedRunner", "check_outputs", "nonfinite_rows"]

#: Row indices listed in a message; the count says how many there are in all.
SHOWN_ROWS = 8


def nonfinite_rows(values: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``values`` (axis 0) holding a NaN or an infinity.

    Returns
    -------
    ndarray of int64 of shape (n_bad,)
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    flat = arr.reshape(len(arr), -1) if arr.ndim > 1 else arr[:, None]
    return np.flatnonzero(~np.isfinite(flat).all(axis=1)).astype(np.int64)


def _listing(rows: np.ndarray) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:SHOWN_ROWS])
    return shown + (f", ... ({len(rows)} in all)" if len(rows) > SHOWN_ROWS else "")


def check_outputs(
    out: np.ndarray,
    method: str,
    *,
    rows: np.ndarray | None = None,
    what: str = "outputs",
    of: str = "X",
    label: str | None = None,
) -> np.ndarray:
    """``out`` if every value is finite; else raise :class:`ModelOutputError` naming its rows.

    Parameters
    ----------
    out : ndarray of shape (n, ...)
        Model outputs (or gradients), one row per input row.
    method : str
        The method or tool asking, for the message.
    rows : ndarray of int of shape (n,), optional
        The index of each row in the caller's data (``0 .. n-1`` by default).
    what : str, default="outputs"
        ``"outputs"`` or ``"gradients"``.
    of : str, default="X"
        What the rows are rows of, for the message.
    label : str, optional
        How the message names the method (default ``method`` itself).

    Returns
    -------
    ndarray
        ``out``, unchanged.
    """
    bad = nonfinite_rows(out)
    if bad.size == 0:
        return out
    named = bad if rows is None else np.asarray(rows, dtype=np.int64)[bad]
    raise ModelOutputError(
        method,
        named,
        len(out),
        f"{label or method}: the model returned NaN or infinite {what} for {bad.size} of the "
        f"{len(out)} rows given (rows {_listing(named)} of {of}); their results would be NaN. "
        "Check the model "
        "on these rows (its inputs' range, a division by zero, NaN weights) or leave them out.",
    )


class GuardedRunner(ModelRunner):
    """A runner whose outputs and gradients are checked finite before a method sees them.

    It runs the wrapped runner's model on its backend (same model, backend, counters); only
    the values coming back are checked.

    Parameters
    ----------
    runner : ModelRunner
    method : str
        The explainer's name, for messages.
    X : ndarray of shape (n_samples, *input_shape)
        The rows being explained.
    rows : ndarray of int64 of shape (n_samples,)
        Their index in the caller's data.
    """

    def __init__(self, runner: ModelRunner, method: str, X: np.ndarray, rows: np.ndarray) -> None:
        self.__dict__.update(runner.__dict__)  # model, backend, batch_size: shared, not copied
        self.inner = runner
        self.method = method
        self.explained = X
        self.explained_rows = np.asarray(rows, dtype=np.int64)

    def _check(self, out: np.ndarray, X: np.ndarray, what: str, recheck: Any) -> np.ndarray:
        arr = np.asarray(out)
        # the common case, one pass (a ufunc's reduce: no Python-level wrapper on every call)
        if arr.dtype.kind not in "fc" or np.logical_and.reduce(np.isfinite(arr), axis=None):
            return out
        bad = nonfinite_rows(out)
        if bad.size == 0:
            return out
        label = f"method {self.method!r}"
        explained = self.explained
        if len(X) == len(explained) and np.array_equal(
            np.asarray(X, dtype=np.float64), np.asarray(explained, dtype=np.float64)
        ):
            check_outputs(out, self.method, rows=self.explained_rows, what=what, label=label)
        if recheck is not None:  # are the explained rows themselves the cause?
            check_outputs(
                recheck(explained), self.method, rows=self.explained_rows, what=what, label=label
            )
        span = self.explained_rows
        built = f"row {span[0]}" if len(span) == 1 else f"rows {span.min()}..{span.max()}"
        own = f", whose own {what} are finite" if recheck is not None else ""
        raise ModelOutputError(
            self.method,
            bad,
            len(out),
            f"{label}: the model returned NaN or infinite {what} for {bad.size} of the "
            f"{len(out)} inputs it was given (inputs {_listing(bad)} of that call), built from "
            f"{built} of X{own}; the attributions would be NaN. Check "
            "the model over the range the method samples (background, perturbations, path "
            "points) or choose another background or baseline.",
        )

    def predict(self, X: Any) -> np.ndarray:
        """:meth:`ModelRunner.predict`, checked finite."""
        out = self.inner.predict_validated(self.inner.check_X(X))  # checked below, named
        return self._check(out, np.asarray(X), "outputs", self.inner.predict_validated)

    def predict_validated(self, X: np.ndarray) -> np.ndarray:
        """:meth:`ModelRunner.predict_validated`, checked finite."""
        out = self.inner.predict_validated(X)
        return self._check(out, X, "outputs", self.inner.predict_validated)

    def gradient(self, X: Any, target: Any) -> np.ndarray:
        """:meth:`ModelRunner.gradient`, checked finite."""
        return self._check(self.inner.gradient(X, target), np.asarray(X), "gradients", None)

    def gradient_validated(
        self, X: np.ndarray, target: np.ndarray, *, relu_rule: str = "gradient"
    ) -> np.ndarray:
        """:meth:`ModelRunner.gradient_validated`, checked finite."""
        out = self.inner.gradient_validated(X, target, relu_rule=relu_rule)
        return self._check(out, X, "gradients", None)

    def layer_gradient_validated(self, X: np.ndarray, target: np.ndarray, value: str, **kw: Any):
        """:meth:`ModelRunner.layer_gradient_validated`, its gradients checked finite."""
        out = self.inner.layer_gradient_validated(X, target, value, **kw)
        self._check(out.gradient, X, "gradients", None)
        if out.input_gradient is not None:
            self._check(out.input_gradient, X, "gradients", None)
        return out

    def check_finite(self, values: np.ndarray, *, what: str = "outputs", of: str = "X") -> None:
        """:meth:`ModelRunner.check_finite`: NaN or infinity raises, naming the rows of ``of``."""
        arr = np.asarray(values)
        if arr.dtype.kind not in "fc" or np.logical_and.reduce(np.isfinite(arr), axis=None):
            return
        rows = self.explained_rows if of == "X" and len(arr) == len(self.explained_rows) else None
        check_outputs(
            arr, self.method, rows=rows, what=what, of=of, label=f"method {self.method!r}"
        )

    def activations(self, X: Any, layer: int | str) -> np.ndarray:
        """:meth:`ModelRunner.activations` of the wrapped runner."""
        return self.inner.activations(X, layer)

    def __repr__(self) -> str:
        return repr(self.inner)
