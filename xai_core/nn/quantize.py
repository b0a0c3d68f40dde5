"""Post-training int8 quantisation of a native network, in TensorFlow Lite's int8 scheme.

``xai.quantize(net, calibration_X)`` turns a trained :class:`xai_core.nn.Sequential` into a
:class:`QuantizedModel` that the Edge TPU (and the TPU v1 preset) can run:

- **weights** int8, symmetric, one scale per output channel: ``w = s_w[c] * q``,
  ``q in [-127, 127]``;
- **activations** int8, asymmetric, one scale and zero point per tensor, from the ranges
  seen on the calibration data: ``x = s * (q - z)``, ``q in [-128, 127]``;
- **biases** int32 at scale ``s_x * s_w[c]``;
- every Dense and Conv2D is one int8 x int8 GEMM with exact int32 accumulation, then
  **requantisation** with TFLite's fixed-point multipliers (``M = s_x * s_w / s_y`` as a
  31-bit mantissa and a shift; rounding doubling high multiply, then rounding right shift)
  and a clamp; a following ReLU is fused into that clamp;
- Tanh and Sigmoid are 256-entry lookup tables onto TFLite's fixed output scales (1/128
  and 1/256); Softmax uses a lookup table of ``exp`` over the int8 differences from the
  row maximum and writes probabilities at scale 1/256; max and average pooling, Flatten,
  Reshape and Linear work on the int8 values directly.

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
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit
from tqdm.auto import tqdm

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError, ValidationError
from xai_core.model.base import Model
from xai_core.validation import check_array, check_positive_int

__all__ = [
    "QuantParams",
    "QuantizedModel",
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
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.clip(x << left, -(2**31), 2**31 - 1)
    ab = x * q
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    total = ab + nudge
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))  # division truncating to zero
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


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


def _vector(backend: Backend, fn, *arrays: np.ndarray, ops: int = 1) -> np.ndarray:
    """Integer elementwise work: counted on an int8 device's vector unit, else done on the host."""
    if _int8_native(backend):
        return np.asarray(backend.elementwise(fn, *arrays, ops=ops))
    return np.asarray(fn(*arrays))


# -- quantised layers --------------------------------------------------------------------------


class _QOp:
    """One step of the integer pipeline: int8 in, int8 out."""

    kind: ClassVar[str] = "op"

    def __init__(self, name: str, in_params: QuantParams, out_params: QuantParams) -> None:
        self.name = name
        self.in_params = in_params
        self.out_params = out_params
        self.fused_relu = False

    def run(self, q: np.ndarray, backend: Backend) -> np.ndarray:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "input_scale": self.in_params.scale,
            "input_zero_point": self.in_params.zero_point,
            "output_scale": self.out_params.scale,
            "output_zero_point": self.out_params.zero_point,
        }


class _QGemm(_QOp):
    """Dense or Conv2D: int8 GEMM, int32 accumulation, bias, fixed-point requantisation."""

    kind = "gemm"

    def __init__(
        self,
        name: str,
        weight: np.ndarray,
        bias: np.ndarray,
        in_params: QuantParams,
        out_params: QuantParams,
        fused_relu: bool,
    ) -> None:
        super().__init__(name, in_params, out_params)
        w = np.asarray(weight, dtype=np.float64)  # (K, out_channels)
        peak = np.abs(w).max(axis=0)
        self.weight_scale = np.where(peak > 0, peak / 127.0, 1.0)
        self.q_weight = np.clip(_round_half_away(w / self.weight_scale), -127, 127).astype(np.int8)
        acc_scale = in_params.scale * self.weight_scale
        q_bias = _round_half_away(np.asarray(bias, dtype=np.float64) / acc_scale)
        self.q_bias = np.clip(q_bias, -(2**31), 2**31 - 1).astype(np.int64)
        # zero-point correction folded into the bias: sum_k (q_x - z_x) q_w = q_x @ q_w - z_x * colsum
        self.offset = self.q_bias - in_params.zero_point * self.q_weight.astype(np.int64).sum(
            axis=0
        )
        self.multiplier, self.shift = quantize_multiplier(acc_scale / out_params.scale)
        self.fused_relu = fused_relu
        self.low = out_params.zero_point if fused_relu else QMIN

    def gemm(self, cols: np.ndarray, backend: Backend) -> np.ndarray:
        acc = int8_matmul(backend, cols, self.q_weight)
        return self._requant(acc, backend)

    def _requant(self, acc: np.ndarray, backend: Backend) -> np.ndarray:
        z, low = self.out_params.zero_point, self.low
        q, shift, offset = self.multiplier, self.shift, self.offset

        def requant(acc_):
            scaled = multiply_by_quantized_multiplier(acc_ + offset, q, shift)
            return np.clip(scaled + z, low, QMAX).astype(np.int8)

        return _vector(backend, requant, acc, ops=4)

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update(
            fused_relu=self.fused_relu,
            weight_scale_min=float(self.weight_scale.min()),
            weight_scale_max=float(self.weight_scale.max()),
        )
        return out


class _QDense(_QGemm):
    kind = "dense"

    def run(self, q, backend):
        return self.gemm(q, backend)


class _QConv(_QGemm):
    kind = "conv2d"

    def __init__(self, layer, in_params, out_params, fused_relu):
        self.filters = layer.filters
        self.kernel_size = layer.kernel_size
        self.stride = layer.strides
        self.padding = layer.pads
        self.output_shape = layer.output_shape
        weight = np.asarray(layer.weight).reshape(layer.filters, -1).T  # (c * kh * kw, filters)
        super().__init__(layer.name, weight, layer.bias, in_params, out_params, fused_relu)

    def run(self, q, backend):
        from xai_core.nn.im2col import windows

        kh, kw = self.kernel_size
        # padding holds the zero point: the quantised value of a real zero
        win = windows(q, kh, kw, self.stride, self.padding, fill=self.in_params.zero_point)
        n, c, oh, ow = win.shape[:4]
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
        y = self.gemm(np.ascontiguousarray(cols), backend)
        return y.reshape(n, oh, ow, self.filters).transpose(0, 3, 1, 2)


class _QRelu(_QOp):
    kind = "relu"

    def run(self, q, backend):
        z = np.int8(self.in_params.zero_point)
        return _vector(backend, lambda v: np.maximum(v, z), q)


class _QTable(_QOp):
    """Tanh or Sigmoid as a lookup table of all 256 int8 inputs (TFLite's output scales)."""

    FUNCTIONS: ClassVar[dict[str, tuple[Any, QuantParams]]] = {
        "tanh": (np.tanh, QuantParams(1.0 / 128, 0)),
        "sigmoid": (expit, QuantParams(1.0 / 256, -128)),
    }

    def __init__(self, name, kind, in_params):
        fn, out_params = self.FUNCTIONS[kind]
        super().__init__(name, in_params, out_params)
        self.kind = kind
        grid = in_params.dequantize(np.arange(QMIN, QMAX + 1)).astype(np.float64)
        self.table = out_params.quantize(fn(grid))

    def run(self, q, backend):
        table = self.table
        return _vector(backend, lambda v: table[v.astype(np.int64) - QMIN], q)


class _QSoftmax(_QOp):
    """Softmax over the last axis: ``exp`` of the int8 distance to the row maximum from a table."""

    kind = "softmax"

    def __init__(self, name, in_params):
        super().__init__(name, in_params, QuantParams(1.0 / 256, -128))
        self.exp_table = np.exp(-in_params.scale * np.arange(256)).astype(np.float32)

    def run(self, q, backend):
        table, out = self.exp_table, self.out_params

        def softmax(v):
            d = v.max(axis=-1, keepdims=True).astype(np.int64) - v.astype(np.int64)
            e = table[d].astype(np.float64)
            return out.quantize(e / e.sum(axis=-1, keepdims=True))

        return _vector(backend, softmax, q, ops=4)


class _QPool(_QOp):
    def __init__(self, layer, kind, in_params):
        super().__init__(layer.name, in_params, in_params)
        self.kind = kind
        self.pool_size, self.stride, self.padding = layer.pool_size, layer.strides, layer.pads

    def run(self, q, backend):
        from xai_core.nn.im2col import windows

        ph, pw = self.pool_size
        if self.kind == "maxpool2d":
            win = windows(q, ph, pw, self.stride, self.padding, fill=QMIN)
            return _vector(backend, lambda w: w.max(axis=(4, 5)), win)
        # mean of the int8 values, zero-point padding, rounded half away from zero
        win = windows(q, ph, pw, self.stride, self.padding, fill=self.in_params.zero_point)
        count = ph * pw

        def mean(w):
            total = w.astype(np.int64).sum(axis=(4, 5))
            half = np.where(total >= 0, count // 2, -(count // 2))
            avg = total + half
            return np.where(avg >= 0, avg // count, -((-avg) // count)).astype(np.int8)

        return _vector(backend, mean, win)


class _QReshape(_QOp):
    kind = "reshape"

    def __init__(self, name, in_params, output_shape):
        super().__init__(name, in_params, in_params)
        self.output_shape = tuple(output_shape)

    def run(self, q, backend):
        return q.reshape(q.shape[0], *self.output_shape)


# -- the model ---------------------------------------------------------------------------------


class QuantizedModel(Model):
    """An int8 network produced by :func:`quantize`; runs on ``edgetpu`` and on every other backend.

    Attributes
    ----------
    input_params : QuantParams
        Quantisation of the input.
    steps : list
        The integer pipeline, one step per layer (a ReLU fused into the Dense or Conv2D
        before it is not a step of its own). Each has ``name``, ``kind``, ``in_params`` and
        ``out_params``; Dense and Conv2D steps also ``q_weight`` (int8, shape (K, out)),
        ``weight_scale`` (per output channel), ``q_bias`` (int32 values at scale
        ``in_params.scale * weight_scale``), ``multiplier`` and ``shift`` (the fixed-point
        requantisation) and ``fused_relu``.
    layers : list of dict
        The steps' scales and zero points, for display.
    source : Sequential
        The float network it was made from.

    Notes
    -----
    Inference only: an int8 network's rounding steps have no useful derivative; take
    gradients of the float network. ``activations`` of a Dense or Conv2D layer whose
    ReLU was fused are the activations after that ReLU.
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "activations"})
    is_quantized: bool = True

    def __init__(self, source: Any, input_params: QuantParams, ops: list[_QOp], stop_of: list[int]):
        self.source = source
        self.input_shape = tuple(source.input_shape)
        self.n_outputs = source.n_outputs
        self.output_names = source.output_names
        self.image_shape = getattr(source, "image_shape", None)
        self.classes_ = getattr(source, "classes_", None)
        self.input_params = input_params
        self.steps = ops
        self._stop_of = stop_of  # float layer index -> number of steps that produce its output

    @property
    def layers(self) -> list[dict[str, Any]]:
        return [op.info() for op in self.steps]

    @property
    def output_params(self) -> QuantParams:
        """Quantisation of the final output."""
        return self.steps[-1].out_params if self.steps else self.input_params

    def _backend(self, backend: Any) -> Backend:
        if backend is None:
            from xai_core.backends.cpu import CPUBackend

            return CPUBackend()
        from xai_core.model.runner import get_backend

        return get_backend(backend)

    def forward_int(self, X: np.ndarray, backend: Any = None, *, stop: int | None = None):
        """Quantise ``X`` and run steps ``[0, stop)``; return the int8 result and its parameters.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
        backend : str or Backend, optional
        stop : int, optional

        Returns
        -------
        q : ndarray of int8
        params : QuantParams
        """
        backend = self._backend(backend)
        q = self.input_params.quantize(X)
        params = self.input_params
        for op in self.steps[:stop]:
            q = op.run(q, backend)
            params = op.out_params
        return q, params

    def predict(self, X: Any, backend: Any = None) -> np.ndarray:
        """Dequantised outputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        backend : str or Backend, optional
            Default ``cpu``; every backend gives bit-identical results.

        Returns
        -------
        ndarray of float32, shape (n_samples, n_outputs)
        """
        X = check_array(X, "X", feature_shape=self.input_shape)
        q, params = self.forward_int(X, backend)
        return params.dequantize(q).reshape(len(X), -1)

    def activations(self, X: Any, layer: int | str, backend: Any = None) -> np.ndarray:
        """Dequantised outputs of a layer of the source network (index or name).

        Returns
        -------
        ndarray of float32, shape (n_samples, *that layer's output shape)
        """
        index = self.source.layer_index(layer)
        X = check_array(X, "X", feature_shape=self.input_shape)
        q, params = self.forward_int(X, backend, stop=self._stop_of[index])
        return params.dequantize(q)

    def __repr__(self) -> str:
        name = getattr(self.source, "name", None) or "Sequential"
        return f"QuantizedModel(int8, {len(self.steps)} steps, from {name!r})"


_SUPPORTED = (
    "AvgPool2D",
    "Conv2D",
    "Dense",
    "Flatten",
    "Linear",
    "MaxPool2D",
    "ReLU",
    "Reshape",
    "Sigmoid",
    "Softmax",
    "Tanh",
)


def _plain(layer: Any) -> bool:
    """Whether a layer uses only what the int8 pipeline implements (NCHW, no groups, ...)."""
    if getattr(layer, "layout", "NCHW") != "NCHW":
        return False
    if type(layer).__name__ in ("Conv2D", "Dense"):
        plain = layer.use_bias
        return (
            plain
            and getattr(layer, "groups", 1) == 1
            and getattr(layer, "dilation", (1, 1)) == (1, 1)
        )
    return getattr(layer, "count_include_pad", True)


def quantize(
    net: Any, calibration_X: Any, *, batch_size: int = 1024, progress: bool = True
) -> QuantizedModel:
    """Post-training int8 quantisation in TensorFlow Lite's int8 scheme.

    Parameters
    ----------
    net : xai_core.nn.Sequential
        A trained native network with known input shape.
    calibration_X : array-like of shape (n_samples, *net.input_shape)
        Representative inputs; the range of every layer's output on them sets that
        tensor's scale and zero point. A few hundred rows are usually enough.
    batch_size : int, default=1024
        Rows per calibration pass.
    progress : bool, default=True
        Show a progress bar over calibration batches.

    Returns
    -------
    QuantizedModel
        ``is_quantized = True``; runs on ``edgetpu`` (and ``tpu`` preset v1) and, with
        identical results, on every other backend.

    Examples
    --------
    >>> qnet = xai.quantize(net, X_train[:500])
    >>> xai.ModelRunner(qnet, backend="edgetpu").predict(X_test)
    """
    from xai_core.backends.cpu import CPUBackend
    from xai_core.nn import Sequential

    if not isinstance(net, Sequential):
        raise CapabilityError(
            "xai.quantize needs a native network (xai.nn.Sequential or xai.from_sklearn); "
            f"got {type(net).__name__}."
        )
    if not net.built:
        raise ValidationError("net has no weights yet: train it (fit) or give input_shape= first.")
    batch_size = check_positive_int(batch_size, "batch_size")
    X = check_array(calibration_X, "calibration_X", feature_shape=net.input_shape, dtype=net.dtype)
    kinds = [type(layer).__name__ for layer in net.layers]
    for layer, kind in zip(net.layers, kinds):
        if kind not in _SUPPORTED or not _plain(layer):
            raise CapabilityError(
                f"layer {layer.name!r} ({kind}) cannot be quantised; quantisable layers: "
                f"{', '.join(_SUPPORTED)} (NCHW, with bias, no groups or dilation)."
            )

    # calibration: the range of the input and of every layer's output, in fp32 on the cpu
    cpu = CPUBackend(dtype=net.dtype)
    lo = np.full(len(net.layers) + 1, np.inf)
    hi = np.full(len(net.layers) + 1, -np.inf)
    starts = range(0, len(X), batch_size)
    for start in tqdm(starts, desc="calibrating", disable=not progress or len(starts) < 2):
        out = X[start : start + batch_size]
        lo[0], hi[0] = min(lo[0], out.min()), max(hi[0], out.max())
        for i, layer in enumerate(net.layers, start=1):
            out = layer.forward(out, cpu, cache=False)
            lo[i], hi[i] = min(lo[i], out.min()), max(hi[i], out.max())

    params = [QuantParams.from_range(a, b) for a, b in zip(lo, hi)]
    ops: list[_QOp] = []
    stop_of: list[int] = []
    current = params[0]
    i = 0
    while i < len(net.layers):
        layer, kind = net.layers[i], kinds[i]
        fused = kind in ("Dense", "Conv2D") and i + 1 < len(net.layers) and kinds[i + 1] == "ReLU"
        out_index = i + 2 if fused else i + 1
        if kind == "Dense":
            op = _QDense(layer.name, layer.weight, layer.bias, current, params[out_index], fused)
        elif kind == "Conv2D":
            op = _QConv(layer, current, params[out_index], fused)
        elif kind == "ReLU":
            op = _QRelu(layer.name, current, current)
        elif kind in ("Tanh", "Sigmoid"):
            op = _QTable(layer.name, kind.lower(), current)
        elif kind == "Softmax":
            op = _QSoftmax(layer.name, current)
        elif kind in ("MaxPool2D", "AvgPool2D"):
            op = _QPool(layer, kind.lower(), current)
        else:  # Flatten, Reshape, Linear: no arithmetic
            op = _QReshape(layer.name, current, layer.output_shape)
        ops.append(op)
        stop_of.extend([len(ops)] * (out_index - i))
        current = op.out_params
        i = out_index
    return QuantizedModel(net, params[0], ops, stop_of)
