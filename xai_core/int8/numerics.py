"""TFLite's int8 arithmetic: affine parameters, rounding, fixed-point multipliers, exact products.

The numerics every part of the int8 runtime shares: :class:`QuantParams` (``real = scale *
(q - zero_point)``), :func:`round_half_away` (TFLite's ``TfLiteRound``),
:func:`quantize_multiplier` and :func:`multiply_by_quantized_multiplier` (its requantisation
in integers), and the exact int8 products on a backend (:func:`int8_matmul`,
:func:`int8_batched_matmul`, :func:`int8_elementwise`): an int8 device (``edgetpu``, ``tpu``
with ``preset="v1"``) receives the int8 operands; a float backend receives them as floats in
slices of at most :data:`EXACT_K` along K, where every partial sum is an integer below
``2**24`` and therefore exact, and its result is checked to be integral.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError, ValidationError
from xai_core.kernels.int8_product import EXACT_K
from xai_core.kernels.requant import multiply_by_quantized_multiplier_rows

__all__ = [
    "EXACT_K",
    "QMAX",
    "QMIN",
    "QuantParams",
    "int8_batched_matmul",
    "int8_elementwise",
    "int8_matmul",
    "int8_native",
    "multiply_by_quantized_multiplier",
    "quantize_multiplier",
    "round_half_away",
]

QMIN, QMAX = -128, 127


@dataclass(frozen=True)
class QuantParams:
    """Per-tensor affine quantisation: ``real = scale * (q - zero_point)``."""

    scale: float
    zero_point: int

    @classmethod
    def from_range(cls, lo: float, hi: float) -> QuantParams:
        """TFLite's asymmetric int8 parameters for values in ``[lo, hi]`` (0 always representable)."""
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        scale = (hi - lo) / (QMAX - QMIN)
        if scale == 0.0:
            return cls(1.0, 0)
        zero_point = int(np.clip(round_half_away(QMIN - lo / scale), QMIN, QMAX))
        return cls(scale, zero_point)

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """int8 of ``round(x / scale) + zero_point``, clamped."""
        q = round_half_away(np.asarray(x, dtype=np.float64) / self.scale) + self.zero_point
        return np.clip(q, QMIN, QMAX).astype(np.int8)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """float32 of ``scale * (q - zero_point)``."""
        return (self.scale * (q.astype(np.float64) - self.zero_point)).astype(np.float32)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (TFLite's ``TfLiteRound``)."""
    return np.trunc(x + np.copysign(0.5, x))


# -- TFLite's fixed-point requantisation ---------------------------------------------------


def quantize_multiplier(multiplier: Any) -> tuple[np.ndarray, np.ndarray]:
    """Write real multipliers as ``q * 2**(shift - 31)`` with a 31-bit integer ``q``.

    Parameters
    ----------
    multiplier : array-like of float, each >= 0

    Returns
    -------
    q : ndarray of int64
        In ``[2**30, 2**31)``, or 0 for a multiplier too small to represent.
    shift : ndarray of int64
    """
    m = np.asarray(multiplier, dtype=np.float64)
    if np.any(~np.isfinite(m)) or np.any(m < 0):
        raise ValidationError(f"multipliers must be finite and >= 0; got {m[~(m >= 0)][:3]}.")
    mant, exp = np.frexp(m)
    q = round_half_away(mant * 2.0**31).astype(np.int64)
    carry = q == 2**31
    q = np.where(carry, q // 2, q)
    exp = np.where(carry, exp + 1, exp).astype(np.int64)
    tiny = exp < -31
    return np.where(tiny, 0, q), np.where(tiny, 0, exp)


def multiply_by_quantized_multiplier(x: Any, q: Any, shift: Any) -> np.ndarray:
    """``round(x * q * 2**(shift - 31))`` as TFLite computes it, elementwise, in integers.

    A saturating rounding doubling high multiply (``(x * q + 2**30) / 2**31``, the division
    truncating, with the nudge mirrored for negative products) followed by a rounding
    arithmetic right shift by ``-shift`` (ties away from zero); a positive ``shift`` is a
    left shift first. Exact integer arithmetic in int64.

    Parameters
    ----------
    x : array-like of int
        int32-range accumulators, any shape.
    q, shift : array-like of int
        From :func:`quantize_multiplier`, broadcast against ``x`` (per channel: the last axis).

    Returns
    -------
    ndarray of int64
    """
    x = np.asarray(x)
    if x.dtype.kind in "iu":  # one compiled pass (xai_core.kernels.requant), the same integers
        done = multiply_by_quantized_multiplier_rows(x, q, shift)
        if done is not None:
            return done
    x = np.asarray(x, dtype=np.int64)
    q = np.asarray(q, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if np.any(shift > 0):
        x = np.clip(x << np.maximum(shift, 0), -(2**31), 2**31 - 1)
    ab = x * q  # |x * q| < 2**62: exact in int64; every step below works in place on it
    neg = ab < 0
    ab += 1 << 30  # the nudge: 2**30, or 1 - 2**30 for a negative product
    ab -= neg * ((1 << 31) - 1)
    ab += (ab < 0) * ((1 << 31) - 1)  # the shift below floors; this makes it truncate
    ab >>= 31
    right = np.maximum(-shift, 0)
    mask = (np.int64(1) << right) - 1
    remainder = ab & mask
    threshold = (mask >> 1) + (ab < 0)
    ab >>= right
    ab += remainder > threshold
    return ab


# -- integer work on a backend ---------------------------------------------------------------


def int8_native(backend: Backend) -> bool:
    from xai_core.backends.tpu import TPUBackend

    return bool(getattr(backend, "requires_quantized", False)) or (
        isinstance(backend, TPUBackend) and backend.int8
    )


def int8_matmul(backend: Backend, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact product of int8 matrices on ``backend``, as int64 of shape (M, N).

    Parameters
    ----------
    backend : Backend
        An int8 device gets the int8 operands. A float backend gets them as float32 in
        K-slices of at most 1024, where every partial sum is an integer below ``2**24``
        and therefore exact; its result is checked to be integral.
    a : ndarray of int8, shape (M, K)
    b : ndarray of int8, shape (K, N)
    """
    if int8_native(backend):
        return np.asarray(backend.matmul(a, b)).astype(np.int64)
    out = np.zeros((a.shape[0], b.shape[1]), dtype=np.int64)
    for k0 in range(0, a.shape[1], EXACT_K):
        part = np.asarray(
            backend.matmul(
                a[:, k0 : k0 + EXACT_K].astype(np.float32),
                b[k0 : k0 + EXACT_K].astype(np.float32),
            ),
            dtype=np.float64,
        )
        whole = np.rint(part)
        if not np.array_equal(whole, part):
            raise CapabilityError(
                f"the {backend.name!r} backend does not multiply small integers exactly, so it "
                "cannot run an int8 model; use cpu, gpu, tpu or edgetpu."
            )
        out += whole.astype(np.int64)
    return out


def int8_batched_matmul(backend: Backend, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact products ``a[i] @ b[i]`` of int8 stacks on ``backend``, as int64 (groups, M, N).

    One :meth:`~xai_core.backends.base.Backend.batched_matmul` call (a depthwise
    convolution's per-channel products), exact as :func:`int8_matmul` is: an int8 device gets
    the int8 operands; a float backend gets float32 operands when K is at most 1024 (every
    partial sum below ``2**24``), else each product goes through :func:`int8_matmul`.
    """
    if int8_native(backend):
        return np.asarray(backend.batched_matmul(a, b)).astype(np.int64)
    if a.shape[2] > EXACT_K:
        return np.stack([int8_matmul(backend, ai, bi) for ai, bi in zip(a, b)])
    part = np.asarray(
        backend.batched_matmul(a.astype(np.float32), b.astype(np.float32)), dtype=np.float64
    )
    whole = np.rint(part)
    if not np.array_equal(whole, part):
        raise CapabilityError(
            f"the {backend.name!r} backend does not multiply small integers exactly, so it "
            "cannot run an int8 model; use cpu, gpu, tpu or edgetpu."
        )
    return whole.astype(np.int64)


def int8_elementwise(backend: Backend, fn, *arrays: np.ndarray, ops: int = 1) -> np.ndarray:
    """Integer elementwise work: counted on an int8 device's vector unit, else done on the host."""
    if int8_native(backend):
        return np.asarray(backend.elementwise(fn, *arrays, ops=ops))
    return np.asarray(fn(*arrays))
