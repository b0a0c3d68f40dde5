"""More elementwise functions of one input: trigonometry, rounding, tests, thresholds.

Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh; Floor, Ceil, Round, Sign (whose
derivative is 0 almost everywhere, as PyTorch's autograd takes it); IsNaN and IsInf (1 where
the test holds, else 0; derivative 0); ThresholdedReLU, Shrink and Swish; CastTo (values
rounded to a narrower type's, ONNX ``Cast`` to float16, bfloat16, float8 or int4). Each is a
:class:`~xai_core.nn.activations.UnaryFunction`: one ``backend.elementwise`` call forward
and one backward, in the backend's dtype.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from xai_core.errors import ValidationError
from xai_core.nn.activations import UnaryFunction
from xai_core.validation import check_number

__all__ = [
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "IsNaN",
    "IsInf",
    "ThresholdedReLU",
    "Shrink",
    "Swish",
    "CastTo",
]


def _c(x: np.ndarray, value: float) -> Any:
    return x.dtype.type(value)


def _function(
    name: str, f: Any, df: Any, doc: str, ops: int = 8, grad_ops: int = 9
) -> type[UnaryFunction]:
    """A :class:`UnaryFunction` computing ``f(x)``, with ``g * df(x)`` as its backward pass."""

    def fn(self, x):
        return f(x).astype(x.dtype, copy=False)

    def dfn(self, g, x):
        return (g * df(x)).astype(g.dtype, copy=False)

    return type(
        name,
        (UnaryFunction,),
        {
            "__doc__": doc,
            "__module__": __name__,
            "kind": name.lower(),
            "ops": ops,
            "grad_ops": grad_ops,
            "fn": fn,
            "dfn": dfn,
        },
    )


def _zero(x):
    return np.zeros_like(x)


Tan = _function(
    "Tan", np.tan, lambda x: 1 + np.tan(x) ** 2, "``tan(x)``; derivative ``1 + tan(x)**2``."
)
Asin = _function(
    "Asin",
    np.arcsin,
    lambda x: 1 / np.sqrt(1 - x * x),
    "``arcsin(x)``; derivative ``1/sqrt(1-x**2)``.",
)
Acos = _function(
    "Acos",
    np.arccos,
    lambda x: -1 / np.sqrt(1 - x * x),
    "``arccos(x)``; derivative ``-1/sqrt(1-x**2)``.",
)
Atan = _function(
    "Atan", np.arctan, lambda x: 1 / (1 + x * x), "``arctan(x)``; derivative ``1/(1+x**2)``."
)
Sinh = _function("Sinh", np.sinh, np.cosh, "``sinh(x)``; derivative ``cosh(x)``.")
Cosh = _function("Cosh", np.cosh, np.sinh, "``cosh(x)``; derivative ``sinh(x)``.")
Asinh = _function(
    "Asinh",
    np.arcsinh,
    lambda x: 1 / np.sqrt(x * x + 1),
    "``arcsinh(x)``; derivative ``1/sqrt(x**2+1)``.",
)
Acosh = _function(
    "Acosh",
    np.arccosh,
    lambda x: 1 / np.sqrt(x * x - 1),
    "``arccosh(x)``; derivative ``1/sqrt(x**2-1)``.",
)
Atanh = _function(
    "Atanh", np.arctanh, lambda x: 1 / (1 - x * x), "``arctanh(x)``; derivative ``1/(1-x**2)``."
)
Floor = _function("Floor", np.floor, _zero, "``floor(x)``; derivative 0.", ops=1, grad_ops=1)
Ceil = _function("Ceil", np.ceil, _zero, "``ceil(x)``; derivative 0.", ops=1, grad_ops=1)
Round = _function(
    "Round",
    np.round,
    _zero,
    "``x`` rounded, halves to even (ONNX's); derivative 0.",
    ops=1,
    grad_ops=1,
)
Sign = _function("Sign", np.sign, _zero, "``sign(x)`` (0 at 0); derivative 0.", ops=1, grad_ops=1)
IsNaN = _function(
    "IsNaN", np.isnan, _zero, "1 where ``x`` is NaN, else 0; derivative 0.", ops=1, grad_ops=1
)


class IsInf(UnaryFunction):
    """1 where ``x`` is infinite (of the signs asked for), else 0; the derivative is 0.

    Parameters
    ----------
    detect_negative, detect_positive : bool, default=True
    """

    kind: ClassVar[str] = "isinf"

    def __init__(
        self, detect_negative: bool = True, detect_positive: bool = True, name: str | None = None
    ) -> None:
        super().__init__(name)
        self.detect_negative = bool(detect_negative)
        self.detect_positive = bool(detect_positive)

    def fn(self, x):
        hit = np.zeros(x.shape, dtype=bool)
        if self.detect_negative:
            hit |= np.isneginf(x)
        if self.detect_positive:
            hit |= np.isposinf(x)
        return hit.astype(x.dtype)

    def dfn(self, g, x):
        return np.zeros_like(g)

    def get_config(self):
        return {"detect_negative": self.detect_negative, "detect_positive": self.detect_positive}


class ThresholdedReLU(UnaryFunction):
    """``x`` where ``x > alpha``, else 0 (ONNX ``ThresholdedRelu``); derivative 1 there, else 0.

    Parameters
    ----------
    alpha : float, default=1.0
    """

    kind: ClassVar[str] = "thresholded_relu"
    ops: ClassVar[int] = 2

    def __init__(self, alpha: float = 1.0, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")

    def fn(self, x):
        return np.where(x > _c(x, self.alpha), x, _c(x, 0)).astype(x.dtype)

    def dfn(self, g, x):
        return np.where(x > _c(x, self.alpha), g, _c(g, 0)).astype(g.dtype)

    def get_config(self):
        return {"alpha": self.alpha}


class Shrink(UnaryFunction):
    """``x - bias`` where ``x > lambd``, ``x + bias`` where ``x < -lambd``, else 0 (ONNX
    ``Shrink``, PyTorch's soft shrink when ``bias == lambd``); derivative 1 outside, 0 inside.

    Parameters
    ----------
    bias : float, default=0.0
    lambd : float, default=0.5
    """

    kind: ClassVar[str] = "shrink"
    ops: ClassVar[int] = 4

    def __init__(self, bias: float = 0.0, lambd: float = 0.5, name: str | None = None) -> None:
        super().__init__(name)
        self.bias = check_number(bias, "bias")
        self.lambd = check_number(lambd, "lambd")

    def fn(self, x):
        lo, b = _c(x, self.lambd), _c(x, self.bias)
        return np.where(x > lo, x - b, np.where(x < -lo, x + b, _c(x, 0))).astype(x.dtype)

    def dfn(self, g, x):
        lo = _c(x, self.lambd)
        return np.where((x > lo) | (x < -lo), g, _c(g, 0)).astype(g.dtype)

    def get_config(self):
        return {"bias": self.bias, "lambd": self.lambd}


class Swish(UnaryFunction):
    """``x * sigmoid(alpha * x)`` (SiLU when ``alpha == 1``).

    Parameters
    ----------
    alpha : float, default=1.0
    """

    kind: ClassVar[str] = "swish"
    ops: ClassVar[int] = 5
    grad_ops: ClassVar[int] = 8

    def __init__(self, alpha: float = 1.0, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")

    def fn(self, x):
        return (x * expit(_c(x, self.alpha) * x)).astype(x.dtype)

    def dfn(self, g, x):
        a = _c(x, self.alpha)
        s = expit(a * x)
        return (g * (s + a * x * s * (1 - s))).astype(g.dtype)

    def get_config(self):
        return {"alpha": self.alpha}


#: The types :class:`CastTo` rounds to: narrow floats (ml_dtypes) and narrow integers, every
#: value of which a float32 holds exactly.
CAST_TYPES = (
    "float16 bfloat16 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz "
    "float4_e2m1fn int8 uint8 int16 uint16 int4 uint4 int2 uint2"
).split()


def cast_dtype(to: str) -> np.dtype:
    """The dtype named ``to`` (one of :data:`CAST_TYPES`; the narrow ones ml_dtypes')."""
    import ml_dtypes

    if to not in CAST_TYPES:
        raise ValidationError(f"CastTo: to must be one of {CAST_TYPES}; got {to!r}.")
    return np.dtype(getattr(ml_dtypes, to, None) or to)


class CastTo(UnaryFunction):
    """``x`` rounded to the nearest value of a narrower type, kept in the network's dtype:
    ONNX ``Cast`` (``x.astype(to)``, as onnx's reference does it) of a computed tensor.

    For a float type the backward pass is the gradient cast to the type in turn, as
    PyTorch's autograd takes ``x.to(torch.float16)`` (its ``ToCopyBackward`` casts the
    incoming gradient), and 0 where a saturating cast clips, as for
    ``x.clamp(-448, 448).to(torch.float8_e4m3fn)``; for an integer type it is 0 (a cast to
    integers has no gradient).

    Parameters
    ----------
    to : str
        One of :data:`CAST_TYPES`: ``"float16"``, ``"bfloat16"``, ``"float8_e4m3fn"`` ...
    saturate : bool, default=False
        Clip to the type's finite range first (ONNX's ``saturate=1``, the default of its
        float8 casts); otherwise a value out of range becomes what ``astype`` makes of it
        (NaN or infinity for a float8).
    """

    kind: ClassVar[str] = "cast_to"
    ops: ClassVar[int] = 2

    def __init__(self, to: str, saturate: bool = False, name: str | None = None) -> None:
        super().__init__(name)
        self.dtype = cast_dtype(to)
        self.to = str(to)
        self.saturate = bool(saturate)

    def _range(self) -> tuple[float, float]:
        import ml_dtypes

        integer = self.to.startswith(("int", "uint"))
        info = ml_dtypes.iinfo(self.dtype) if integer else ml_dtypes.finfo(self.dtype)
        return float(info.min), float(info.max)

    def fn(self, x):
        if self.saturate:
            integer = self.to.startswith(("int", "uint"))
            x = np.clip(np.round(x) if integer else x, *self._range())
        return x.astype(self.dtype).astype(x.dtype)

    def dfn(self, g, x):
        if self.to.startswith(("int", "uint")):
            return np.zeros_like(g)
        g = g.astype(self.dtype).astype(g.dtype)  # the gradient cast as well, as torch's
        if self.saturate:  # a clip first: no gradient where it holds the value
            lo, hi = self._range()
            return np.where((x >= lo) & (x <= hi), g, g.dtype.type(0))
        return g

    def get_config(self):
        return {"to": self.to, "saturate": self.saturate}
