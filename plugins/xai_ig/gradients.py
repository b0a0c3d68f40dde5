"""Saliency and gradient times input: one backward pass per chunk of rows."""

from __future__ import annotations

import re
import textwrap
from typing import ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner
from xai_core.attribution.options import Bool, Int
from xai_ig._batching import chunk_points, gradient_rows

__all__ = ["Saliency", "GradientXInput", "InputXGradient"]


#: The parameters every gradient method takes, written once for their docstrings.
_CHUNK_PARAMS = """\
internal_batch_size : int, optional
    Rows per backward pass. Default: the runner's ``batch_size``, capped at 4M input
    elements per chunk.
progress : bool, optional
    Show a progress bar over chunks; by default only when there are 10 or more."""


def _chunk_params(cls: type) -> type:
    """Put :data:`_CHUNK_PARAMS` where ``cls``'s docstring says ``{chunk_params}``."""
    doc = cls.__doc__
    indent = re.search(r"^([ \t]*)\{chunk_params\}", doc, re.M).group(1)
    params = textwrap.indent(_CHUNK_PARAMS, indent)
    cls.__doc__ = doc.replace(indent + "{chunk_params}", params)
    return cls


class _GradientMethod(Explainer):
    """Shared checks and the batched gradient of the family's local methods."""

    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    constraints: ClassVar[dict] = {"internal_batch_size": Int(1, allow_none=True)}
    internal_batch_size: int | None
    progress: bool | None

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """``n`` outputs and ``n`` gradients (:mod:`xai_ig.cost`)."""
        from xai_ig.cost import gradient_cost

        return gradient_cost(runner, X)

    def _gradients(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradients of shape (n_samples, *input_shape) and outputs ``f(x)[target]`` of shape (n_samples,)."""
        runner.require("gradient")
        n_features = int(np.prod(X.shape[1:], dtype=np.int64))
        chunk = chunk_points(runner, self.internal_batch_size, n_features)
        output = np.asarray(runner.predict(X), dtype=np.float64)[np.arange(len(X)), target]
        grads = gradient_rows(
            runner, X, target, chunk=chunk, progress=self.progress, desc=self.name
        )
        return grads, output


@_chunk_params
class Saliency(_GradientMethod):
    """The gradient of the explained output with respect to each input (Simonyan et al., 2014).

    Parameters
    ----------
    abs : bool, default=True
        Return ``|gradient|`` (as Captum's ``Saliency``), or the signed gradient.
    {chunk_params}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). Saliency is not additive:
    ``base_values`` is the explained output at the input, ``f(x)[target]``, also in
    ``meta["output"]``.
    """

    name: ClassVar[str] = "saliency"
    constraints: ClassVar[dict] = {**_GradientMethod.constraints, "abs": Bool()}

    def __init__(
        self, abs: bool = True, internal_batch_size: int | None = None, progress: bool | None = None
    ) -> None:
        self.abs = abs
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Gradient of ``output[target]`` at each row of ``X`` of shape (n_samples, *input_shape)."""
        take_abs = bool(self.abs)
        grads, output = self._gradients(runner, X, target)
        values = np.abs(grads) if take_abs else grads
        meta = {"output": output, "abs": take_abs}
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)


@_chunk_params
class GradientXInput(_GradientMethod):
    """Gradient times input (Shrikumar et al., 2016): ``x_i * df/dx_i``.

    Parameters
    ----------
    {chunk_params}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). ``base_values`` is
    ``f(x) - sum(values)``, the first-order Taylor estimate of the output at the zero
    input, so that ``base_values + sum(values) = f(x)``; ``meta["output"]`` is ``f(x)``.
    For a linear model without bias it equals integrated gradients from a zero baseline.
    """

    name: ClassVar[str] = "gradient_x_input"

    def __init__(
        self, internal_batch_size: int | None = None, progress: bool | None = None
    ) -> None:
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """``X * gradient`` of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        grads, output = self._gradients(runner, X, target)
        values = grads * np.asarray(X, dtype=np.float64)
        base = output - values.reshape(len(X), -1).sum(axis=1)
        return Explanation(
            values=values, base_values=base, target=target, data=X, meta={"output": output}
        )


class InputXGradient(GradientXInput):
    """Captum's name for :class:`GradientXInput`: ``method="input_x_gradient"``.

    The same computation (Captum's ``InputXGradient``: ``x * df/dx``), registered under
    Captum's name in snake case.
    """

    name: ClassVar[str] = "input_x_gradient"
