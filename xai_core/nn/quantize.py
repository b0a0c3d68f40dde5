"""Post-training int8 quantisation of a native network, in TensorFlow Lite's int8 scheme.

``xai.quantize(net, calibration_X)`` turns a trained native network (a
:class:`~xai_core.nn.Graph` or :class:`~xai_core.nn.Sequential`) into a
:class:`QuantizedModel` that the Edge TPU (and the TPU v1 preset) can run. The model *is* a
full-integer TFLite graph (:mod:`xai_core.nn.int8_graph`), run by TFLite's int8 kernels
(bit-exact with LiteRT) and written as a ``.tflite`` file by :func:`xai_core.to_tflite`:

- **weights** int8, symmetric, one scale per output channel: ``w = s_w[c] * q``,
  ``q in [-127, 127]``;
- **activations** int8, asymmetric, one scale and zero point per tensor, from the ranges
  seen on the calibration data: ``x = s * (q - z)``, ``q in [-128, 127]``;
- **biases** int32 at scale ``s_x * s_w[c]``;
- every Dense and convolution is one int8 x int8 GEMM with exact int32 accumulation, then
  **requantisation** with TFLite's fixed-point multipliers, derived as TFLite derives them
  from the float32 scales it stores (``M = s_x * s_w / s_y`` in double, as a 31-bit mantissa
  and a shift); a following ReLU or ReLU6 is fused into the clamp;
- Tanh and Sigmoid are TFLite's 256-entry tables onto its fixed output scales (1/128 and
  1/256); Softmax and HardSwish are its fixed-point kernels; additions rescale their inputs
  as TFLite does; pools, mean, padding, concatenation and reshapes work on int8 values.

The integer GEMMs go through ``backend.matmul``. An int8 device (``edgetpu``, ``tpu``
with ``preset="v1"``) receives the int8 operands. A float backend (``cpu``, ``gpu``,
``tpu`` in bf16) receives them as floats in slices of at most 1024 along K: every int8
value is exact in fp32, bf16, tf32 and fp16, and every partial sum is an integer below
``2**24``, so its fp32 accumulation is exact in any order. The result is checked to be
integral and the outputs are bit-identical on every backend; the quantised model on the
``cpu`` backend is the reference for the Edge TPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError, ValidationError
from xai_core.validation import check_array, check_positive_int

__all__ = [
    "QuantParams",
    "quantize",
    "quantize_multiplier",
    "multiply_by_quantized_multiplier",
]

QMIN, QMAX = -128, 127
#: Largest K slice whose int8 partial sums stay exact in fp32: 1024 * 128 * 128 = 2**24.
EXACT_K = 1024


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
        zero_point = int(np.clip(_round_half_away(QMIN - lo / scale), QMIN, QMAX))
        return cls(scale, zero_point)

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """int8 of ``round(x / scale) + zero_point``, clamped."""
        q = _round_half_away(np.asarray(x, dtype=np.float64) / self.scale) + self.zero_point
        return np.clip(q, QMIN, QMAX).astype(np.int8)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """float32 of ``scale * (q - zero_point)``."""
        return (self.scale * (q.astype(np.float64) - self.zero_point)).astype(np.float32)


def _round_half_away(x: np.ndarray) -> np.ndarray:
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
    q = _round_half_away(mant * 2.0**31).astype(np.int64)
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


def _int8_native(backend: Backend) -> bool:
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
    if _int8_native(backend):
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
    if _int8_native(backend):
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


def _vector(backend: Backend, fn, *arrays: np.ndarray, ops: int = 1) -> np.ndarray:
    """Integer elementwise work: counted on an int8 device's vector unit, else done on the host."""
    if _int8_native(backend):
        return np.asarray(backend.elementwise(fn, *arrays, ops=ops))
    return np.asarray(fn(*arrays))


def _calibrate(
    net: Any, X: np.ndarray, batch_size: int, progress: Any
) -> dict[str, tuple[float, float]]:
    """The range of the input and of every node's output on ``X``, in fp32 on the cpu."""
    from xai_core.backends.cpu import CPUBackend
    from xai_core.progress import progress_bar

    cpu = CPUBackend(dtype=net.dtype)
    lo = {net.input_name: np.inf, **{n.name: np.inf for n in net.nodes}}
    hi = {k: -np.inf for k in lo}
    starts = range(0, len(X), batch_size)
    long = len(starts) > 1
    with progress_bar(len(X), progress=progress, desc="calibrating", unit="row", long=long) as bar:
        for start in starts:
            values = {net.input_name: X[start : start + batch_size]}
            for node in net.nodes:
                args = [values[name] for name in node.inputs]
                values[node.name] = node.layer.apply(
                    args[0] if node.layer.n_inputs == 1 else args, cpu, None
                )
            for name, v in values.items():
                lo[name], hi[name] = min(lo[name], float(v.min())), max(hi[name], float(v.max()))
            bar.update(len(values[net.input_name]))
    return {k: (lo[k], hi[k]) for k in lo}


def quantize(net: Any, calibration_X: Any, *, batch_size: int = 1024, progress: Any = None) -> Any:
    """Post-training int8 quantisation in TensorFlow Lite's int8 scheme.

    Parameters
    ----------
    net : xai_core.nn.Graph or xai_core.nn.Sequential
        A trained native network with known input shape. Batch norms are folded first.
    calibration_X : array-like of shape (n_samples, *net.input_shape)
        Representative inputs; the range of every node's output on them sets that tensor's
        scale and zero point. A few hundred rows are usually enough.
    batch_size : int, default=1024
        Rows per calibration pass.
    progress : bool, optional
        Progress bar over calibration batches; ``None`` shows one for long work only.

    Returns
    -------
    QuantizedModel
        ``is_quantized = True``; a full-integer TFLite graph that runs on ``edgetpu`` (and
        ``tpu`` preset v1) and, with identical results, on every other backend.

    Examples
    --------
    >>> qnet = xai.quantize(net, X_train[:500])
    >>> xai.ModelRunner(qnet, backend="edgetpu").predict(X_test)
    >>> xai.to_tflite(qnet, "model.tflite")
    """
    from xai_core.nn.int8_graph import build_int8_graph, check_quantisable
    from xai_core.nn.network import Network

    if not isinstance(net, Network):
        raise CapabilityError(
            "xai.quantize needs a native network (xai.nn.Graph, xai.nn.Sequential, an imported "
            f"network or xai.from_sklearn); got {type(net).__name__}."
        )
    if not net.built:
        raise ValidationError("net has no weights yet: train it (fit) or give input_shape= first.")
    weights = net.get_weights()
    if any(not np.all(np.isfinite(w)) for w in weights):
        raise ValidationError("net has non-finite weights (NaN or inf); it cannot be quantised.")
    folded = net.fold_batch_norm()
    check_quantisable(folded)  # before calibration runs any layer
    batch_size = check_positive_int(batch_size, "batch_size")
    X = check_array(calibration_X, "calibration_X", feature_shape=net.input_shape, dtype=net.dtype)
    graph, nodes = build_int8_graph(folded, _calibrate(folded, X, batch_size, progress))
    from xai_core.nn.quantized import QuantizedModel

    return QuantizedModel(folded, graph, nodes)


def __getattr__(name: str) -> Any:  # QuantizedModel lives beside the TFLite model it extends
    if name == "QuantizedModel":
        from xai_core.nn.quantized import QuantizedModel

        return QuantizedModel
    raise AttributeError(name)
