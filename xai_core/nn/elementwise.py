"""Elementwise functions of one input: the ONNX unary operators as layers.

HardSigmoid, Erf, Gelu (exact and tanh), Sqrt, Power (a constant exponent), Exp, Log,
Neg, Abs, Reciprocal, Softplus, Elu, Selu, Sin, Cos, and PRelu (a trained slope that
broadcasts per sample). Each computes its function, and its derivative in the backward
pass, in one ``backend.elementwise`` call, so it runs in the backend's numerics and is
counted by it (:class:`~xai_core.nn.activations.UnaryFunction`, the base they share with
ReLU and HardSwish); :meth:`UnaryFunction.fn` is also what an importer folds a constant with.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import erf, expit

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.activations import Activation, Rescaled, UnaryFunction
from xai_core.validation import check_number

__all__ = [
    "HardSigmoid",
    "Erf",
    "Gelu",
    "Sqrt",
    "Power",
    "Exp",
    "Log",
    "Neg",
    "Abs",
    "Reciprocal",
    "Softplus",
    "Softsign",
    "Mish",
    "Elu",
    "Celu",
    "Selu",
    "Sin",
    "Cos",
    "PRelu",
]

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _c(x: np.ndarray, value: float) -> Any:
    """``value`` as a scalar of ``x``'s dtype (so float32 stays float32)."""
    return x.dtype.type(value)


class HardSigmoid(UnaryFunction):
    """``max(0, min(1, alpha * x + beta))`` (ONNX ``HardSigmoid``; PyTorch's is alpha=1/6).

    Parameters
    ----------
    alpha : float, default=0.2
    beta : float, default=0.5
    name : str, optional
    """

    kind: ClassVar[str] = "hard_sigmoid"
    ops: ClassVar[int] = 4
    grad_ops: ClassVar[int] = 4

    def __init__(self, alpha: float = 0.2, beta: float = 0.5, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")
        self.beta = check_number(beta, "beta")

    def fn(self, x):
        return np.clip(x * _c(x, self.alpha) + _c(x, self.beta), 0, 1).astype(x.dtype)

    def dfn(self, g, x):
        z = x * _c(x, self.alpha) + _c(x, self.beta)
        return np.where((z > 0) & (z < 1), g * _c(g, self.alpha), 0).astype(g.dtype)

    def get_config(self):
        return {"alpha": self.alpha, "beta": self.beta}


class Erf(UnaryFunction):
    """The error function ``erf(x)``; its derivative is ``2 / sqrt(pi) * exp(-x**2)``."""

    kind: ClassVar[str] = "erf"
    ops: ClassVar[int] = 8
    grad_ops: ClassVar[int] = 4

    def fn(self, x):
        return erf(x).astype(x.dtype)

    def dfn(self, g, x):
        return (g * (_c(x, _TWO_OVER_SQRT_PI) * np.exp(-(x * x)))).astype(g.dtype)


class Gelu(UnaryFunction):
    """Gaussian error linear unit (ONNX ``Gelu``, PyTorch's ``GELU``).

    Parameters
    ----------
    approximate : {"none", "tanh"}, default="none"
        ``"none"``: ``0.5 x (1 + erf(x / sqrt 2))``; ``"tanh"``:
        ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x**3)))``.
    name : str, optional
    """

    kind: ClassVar[str] = "gelu"
    ops: ClassVar[int] = 10
    grad_ops: ClassVar[int] = 12

    def __init__(self, approximate: str = "none", name: str | None = None) -> None:
        super().__init__(name)
        if approximate not in ("none", "tanh"):
            raise ValidationError(f"approximate must be 'none' or 'tanh'; got {approximate!r}.")
        self.approximate = approximate

    def fn(self, x):
        if self.approximate == "tanh":
            inner = _c(x, _SQRT_2_OVER_PI) * (x + _c(x, 0.044715) * x * x * x)
            return (_c(x, 0.5) * x * (1 + np.tanh(inner))).astype(x.dtype)
        return (_c(x, 0.5) * x * (1 + erf(x / _c(x, _SQRT_2)))).astype(x.dtype)

    def dfn(self, g, x):
        if self.approximate == "tanh":
            inner = _c(x, _SQRT_2_OVER_PI) * (x + _c(x, 0.044715) * x * x * x)
            t = np.tanh(inner)
            dinner = _c(x, _SQRT_2_OVER_PI) * (1 + _c(x, 3 * 0.044715) * x * x)
            d = _c(x, 0.5) * (1 + t) + _c(x, 0.5) * x * (1 - t * t) * dinner
        else:
            cdf = _c(x, 0.5) * (1 + erf(x / _c(x, _SQRT_2)))
            d = cdf + x * _c(x, _INV_SQRT_2PI) * np.exp(_c(x, -0.5) * x * x)
        return (g * d).astype(g.dtype)

    def get_config(self):
        return {"approximate": self.approximate}


class Sqrt(UnaryFunction):
    """``sqrt(x)`` (NaN below 0, as ONNX); the derivative is ``0.5 / sqrt(x)``."""

    kind: ClassVar[str] = "sqrt"
    ops: ClassVar[int] = 4
    grad_ops: ClassVar[int] = 4

    def fn(self, x):
        return np.sqrt(x)

    def dfn(self, g, x):
        return g * (_c(x, 0.5) / np.sqrt(x))


class Power(UnaryFunction):
    """``x ** exponent`` for a constant exponent (ONNX ``Pow`` with a constant second input).

    Parameters
    ----------
    exponent : float
        A whole exponent raises negative inputs too (``x ** 2``, ``x ** 3``); a fractional one
        gives NaN there, as ONNX does.
    name : str, optional
    """

    kind: ClassVar[str] = "power"
    ops: ClassVar[int] = 4
    grad_ops: ClassVar[int] = 5

    def __init__(self, exponent: float = 2.0, name: str | None = None) -> None:
        super().__init__(name)
        self.exponent = check_number(exponent, "exponent")

    def fn(self, x):
        p = self.exponent
        if p == 2.0:
            return x * x
        if p == 1.0:
            return x.copy()
        return np.power(x, _c(x, p))

    def dfn(self, g, x):
        p = self.exponent
        if p == 2.0:
            return g * (x + x)
        if p == 1.0:
            return g.copy()
        return g * (_c(x, p) * np.power(x, _c(x, p - 1)))

    def get_config(self):
        return {"exponent": self.exponent}


class Exp(UnaryFunction):
    """``exp(x)``; the derivative is the output itself."""

    kind: ClassVar[str] = "exp"
    ops: ClassVar[int] = 4
    grad_ops: ClassVar[int] = 5

    def fn(self, x):
        return np.exp(x)

    def dfn(self, g, x):
        return g * np.exp(x)


class Log(UnaryFunction):
    """Natural logarithm (NaN below 0, -inf at 0, as ONNX); the derivative is ``1 / x``."""

    kind: ClassVar[str] = "log"
    ops: ClassVar[int] = 4

    def fn(self, x):
        return np.log(x)

    def dfn(self, g, x):
        return g / x


class Neg(UnaryFunction):
    """``-x``."""

    kind: ClassVar[str] = "neg"
    grad_ops: ClassVar[int] = 1

    def fn(self, x):
        return np.negative(x)

    def dfn(self, g, x):
        return np.negative(g)


class Abs(UnaryFunction):
    """``|x|``; the derivative is ``sign(x)`` (0 at 0, as PyTorch)."""

    kind: ClassVar[str] = "abs"

    def fn(self, x):
        return np.abs(x)

    def dfn(self, g, x):
        return g * np.sign(x)


class Reciprocal(UnaryFunction):
    """``1 / x``; the derivative is ``-1 / x**2``."""

    kind: ClassVar[str] = "reciprocal"
    grad_ops: ClassVar[int] = 3

    def fn(self, x):
        return _c(x, 1.0) / x

    def dfn(self, g, x):
        return -g / (x * x)


class Softplus(Rescaled, UnaryFunction):
    """``log(1 + exp(x))``, overflow-free; the derivative is the logistic function."""

    kind: ClassVar[str] = "softplus"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale",)
    ops: ClassVar[int] = 6
    grad_ops: ClassVar[int] = 5

    def fn(self, x):
        return np.logaddexp(_c(x, 0.0), x)

    def dfn(self, g, x):
        return g * expit(x)


class Softsign(UnaryFunction):
    """``x / (1 + |x|)``; the derivative is ``1 / (1 + |x|) ** 2``."""

    kind: ClassVar[str] = "softsign"
    ops: ClassVar[int] = 3
    grad_ops: ClassVar[int] = 4

    def fn(self, x):
        return x / (1 + np.abs(x))

    def dfn(self, g, x):
        d = 1 + np.abs(x)
        return g / (d * d)


class Mish(UnaryFunction):
    """``x * tanh(softplus(x))`` (ONNX ``Mish``; YOLOv4's activation)."""

    kind: ClassVar[str] = "mish"
    ops: ClassVar[int] = 12
    grad_ops: ClassVar[int] = 16

    def fn(self, x):
        return x * np.tanh(np.logaddexp(_c(x, 0.0), x))

    def dfn(self, g, x):
        t = np.tanh(np.logaddexp(_c(x, 0.0), x))
        return (g * (t + x * (1 - t * t) * expit(x))).astype(g.dtype)


class Elu(Rescaled, UnaryFunction):
    """``x`` for ``x >= 0``, else ``alpha * (exp(x) - 1)`` (ONNX ``Elu``).

    Parameters
    ----------
    alpha : float, default=1.0
    name : str, optional
    """

    kind: ClassVar[str] = "elu"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale",)
    ops: ClassVar[int] = 6
    grad_ops: ClassVar[int] = 6
    #: The factor on both branches (1 for ELU; SELU's gamma).
    scale: float = 1.0

    def __init__(self, alpha: float = 1.0, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")

    def fn(self, x):
        s, a = _c(x, self.scale), _c(x, self.alpha)
        return np.where(x > 0, s * x, s * a * np.expm1(np.minimum(x, 0))).astype(x.dtype)

    def dfn(self, g, x):
        s, a = _c(x, self.scale), _c(x, self.alpha)
        return np.where(x > 0, g * s, g * (s * a * np.exp(np.minimum(x, 0)))).astype(g.dtype)

    def get_config(self):
        return {"alpha": self.alpha}


class Selu(Elu):
    """``gamma * x`` for ``x > 0``, else ``gamma * alpha * (exp(x) - 1)`` (ONNX ``Selu``).

    Parameters
    ----------
    alpha : float, default=1.67326319217681884765625
    gamma : float, default=1.05070102214813232421875
        ONNX's defaults (float32 values of the self-normalising constants).
    name : str, optional
    """

    kind: ClassVar[str] = "selu"

    def __init__(
        self,
        alpha: float = 1.67326319217681884765625,
        gamma: float = 1.05070102214813232421875,
        name: str | None = None,
    ) -> None:
        super().__init__(alpha, name=name)
        self.gamma = check_number(gamma, "gamma")
        self.scale = self.gamma

    def get_config(self):
        return {"alpha": self.alpha, "gamma": self.gamma}


class Celu(UnaryFunction):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (ONNX ``Celu``).

    Parameters
    ----------
    alpha : float, default=1.0
        Must not be 0.
    name : str, optional
    """

    kind: ClassVar[str] = "celu"
    ops: ClassVar[int] = 6
    grad_ops: ClassVar[int] = 5

    def __init__(self, alpha: float = 1.0, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")
        if self.alpha == 0:
            raise ValidationError("alpha must not be 0.")

    def fn(self, x):
        a = _c(x, self.alpha)
        return np.where(x > 0, x, a * np.expm1(np.minimum(x, 0) / a)).astype(x.dtype)

    def dfn(self, g, x):
        a = _c(x, self.alpha)
        return np.where(x > 0, g, g * np.exp(np.minimum(x, 0) / a)).astype(g.dtype)

    def get_config(self):
        return {"alpha": self.alpha}


class Sin(UnaryFunction):
    """``sin(x)`` (positional encodings); the derivative is ``cos(x)``."""

    kind: ClassVar[str] = "sin"
    ops: ClassVar[int] = 8
    grad_ops: ClassVar[int] = 9

    def fn(self, x):
        return np.sin(x)

    def dfn(self, g, x):
        return g * np.cos(x)


class Cos(UnaryFunction):
    """``cos(x)``; the derivative is ``-sin(x)``."""

    kind: ClassVar[str] = "cos"
    ops: ClassVar[int] = 8
    grad_ops: ClassVar[int] = 9

    def fn(self, x):
        return np.cos(x)

    def dfn(self, g, x):
        return -(g * np.sin(x))


def _prelu(x, slope):
    return np.where(x >= 0, x, x * slope)


def _prelu_grad(g, x, slope):
    return np.where(x >= 0, g, g * slope)


def _prelu_slope_grad(g, x):
    return np.where(x >= 0, 0, g * x).astype(g.dtype)


class PRelu(Activation):
    """``x`` for ``x >= 0``, else ``slope * x``, with a trained ``slope`` broadcast per sample.

    Parameters
    ----------
    slope_shape : tuple of int, default=()
        The per-sample shape of ``slope``, broadcastable to the samples numpy-style
        (trailing axes aligned): ``(c, 1, 1)`` for one slope per NCHW channel (PyTorch's
        ``PReLU(c)``), ``()`` for one slope.
    name : str, optional

    Attributes
    ----------
    slope : ndarray of shape ``slope_shape``
        Initialised 0.25 (PyTorch's default).
    """

    kind: ClassVar[str] = "prelu"

    def __init__(self, slope_shape: tuple[int, ...] = (), name: str | None = None) -> None:
        super().__init__(name)
        try:
            self.slope_shape = tuple(int(d) for d in slope_shape)
        except (TypeError, ValueError):
            raise ValidationError(
                f"slope_shape must be a tuple of ints; got {slope_shape!r}."
            ) from None
        if any(d < 1 for d in self.slope_shape):
            raise ValidationError(f"slope_shape must hold sizes >= 1; got {self.slope_shape}.")

    slope = property(lambda self: self.params["slope"], lambda self, v: self._set_param("slope", v))

    def compute_output_shape(self, input_shape):
        try:
            out = np.broadcast_shapes(tuple(input_shape), self.slope_shape)
        except ValueError:
            out = None
        if out != tuple(input_shape):
            raise ShapeError(
                f"PRelu {self.name!r}: a slope of shape {self.slope_shape} does not broadcast "
                f"to samples of shape {tuple(input_shape)} (trailing axes equal or 1)."
            )
        return input_shape

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """``{"slope": slope_shape}``."""
        return {"slope": self.slope_shape}

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        self.params = {"slope": np.full(self.slope_shape, 0.25, dtype=dtype)}
        return out

    def apply(self, x, backend, record):
        if record is not None:
            record["x"] = x
        return backend.elementwise(_prelu, x, self.slope[None], ops=2)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        x = self._need(record, self)["x"]
        grads = {}
        if param_grads:
            part = backend.elementwise(_prelu_slope_grad, grad, x, ops=2)
            rank = part.ndim
            aligned = (1,) * (rank - len(self.slope_shape)) + self.slope_shape
            axes = tuple(i for i in range(rank) if aligned[i] == 1 and part.shape[i] != 1)
            total = backend.reduce(np.sum, part, axis=axes) if axes else part
            grads["slope"] = np.asarray(total).reshape(self.slope_shape)
        gx = None
        if input_grad:
            gx = backend.elementwise(_prelu_grad, grad, x, self.slope[None], ops=2)
        return gx, grads

    def get_config(self):
        return {"slope_shape": list(self.slope_shape)}
