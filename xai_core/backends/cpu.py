"""The reference CPU backend: plain fp32 (or fp64) arithmetic that touches memory for every operation."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.backends.base import Backend, check_stacks, matmul_operands
from xai_core.errors import ValidationError
from xai_core.plugin.hookspecs import hookimpl
from xai_core.validation import check_float, check_positive_int

__all__ = ["CPUBackend"]


class CPUBackend(Backend):
    """A scalar-memory CPU: the numerics every other backend is compared with.

    The cost model is the textbook one a simulated CPU without caches would have: each
    multiply-accumulate of ``C = A @ B`` reads one element of ``A`` and one of ``B`` from
    memory, and each element of ``C`` is written once. Cycles count one fused
    multiply-add per SIMD lane per cycle.

    Parameters
    ----------
    dtype : {"float32", "float64"}, default="float32"
        Precision of every operation.
    clock_ghz : float, default=3.0
        Clock used for ``est_seconds``.
    simd_width : int, default=8
        SIMD lanes (8 fp32 lanes is AVX2).
    """

    name: ClassVar[str] = "cpu"
    runs_black_boxes: ClassVar[bool] = True  # the host itself
    matmul_rtol: ClassVar[float] = 1e-5

    def __init__(self, dtype: Any = "float32", clock_ghz: float = 3.0, simd_width: int = 8) -> None:
        try:
            ok = dtype is not None and np.dtype(dtype) in (np.float32, np.float64)
        except TypeError:
            ok = False
        if not ok:
            raise ValidationError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")
        self.clock_hz = check_float(clock_ghz, "clock_ghz") * 1e9
        self.simd_width = check_positive_int(simd_width, "simd_width")
        super().__init__(dtype)

    def extra_counters(self) -> tuple[str, ...]:
        return ("reads_a", "reads_b", "writes_c")

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a`` (M, K) @ ``b`` (K, N) in :attr:`dtype` (see :meth:`Backend.matmul`)."""
        a, b = matmul_operands(a, b)
        a = np.asarray(a, dtype=self.dtype)
        b = np.asarray(b, dtype=self.dtype)
        out = a @ b
        (m, k), n = a.shape, b.shape[1]
        self._count_products(1, m, k, n)
        return out

    def matmul_into(
        self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """:meth:`matmul` computed into ``out`` (see :meth:`Backend.matmul_into`), counted the same."""
        if type(self).matmul is not CPUBackend.matmul:
            return super().matmul_into(a, b, out)
        dtype = self.dtype
        a = a if a.dtype == dtype else a.astype(dtype)
        b = b if b.dtype == dtype else b.astype(dtype)
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            matmul_operands(a, b)  # raises the backend's ShapeError
        (m, k), n = a.shape, b.shape[1]
        out = np.matmul(a, b, out=out)
        self._count_products(1, m, k, n)
        return out

    @property
    def exact_operands(self) -> bool:
        """True: plain numpy in :attr:`dtype` (a subclass with its own products says False)."""
        return self._reference()

    def _count_products(self, g: int, m: int, k: int, n: int) -> None:
        """Count ``g`` products of (m, k) by (k, n) matrices, as ``g`` calls of :meth:`matmul`."""
        macs, size, c = g * m * k * n, self.dtype.itemsize, self._counters
        cycles = g * -(-(m * k * n) // self.simd_width)
        c["matmuls"] += g
        c["macs"] += macs
        c["reads_a"] += macs
        c["reads_b"] += macs
        c["writes_c"] += g * m * n
        c["bytes_read"] += 2 * macs * size
        c["bytes_written"] += g * m * n * size
        c["cycles"] += cycles
        c["est_seconds"] += cycles / self.clock_hz

    def _reference(self) -> bool:
        """Whether this backend's products and vector work are the cpu's own (not a subclass's)."""
        cls = type(self)
        return (
            cls.matmul is CPUBackend.matmul
            and cls.batched_matmul is CPUBackend.batched_matmul
            and cls.elementwise is Backend.elementwise
            and cls.reduce is Backend.reduce
        )

    def batched_matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``groups`` products in one stacked numpy product, counted as ``groups`` matmuls.

        The counters are exactly those of the default (one :meth:`matmul` per product). A
        subclass with its own :meth:`matmul` keeps the default, so its products stay its own.
        """
        if type(self).matmul is not CPUBackend.matmul:
            return super().batched_matmul(a, b)
        a = np.asarray(a, dtype=self.dtype)
        b = np.asarray(b, dtype=self.dtype)
        check_stacks(a, b)
        out = np.matmul(a, b)
        g, m, k = a.shape
        self._count_products(g, m, k, b.shape[2])
        return out

    def conv2d(self, x, weight, bias, geometry, record=None):
        """The convolution computed without im2col where :mod:`xai_core.kernels.conv_taps` can.

        Pointwise, depthwise and ``groups = 1`` convolutions run as shifted-slice sums over the
        padded activation, in this backend's dtype, and are counted exactly as the im2col
        path's products (:meth:`Backend.conv2d`) would be; other convolutions, and
        subclasses with their own products, take that path. Without a ``record`` (inference,
        no backward pass to prepare), stride-1 pointwise, one-kernel-per-channel depthwise
        and few-channel convolutions run the channels-last kernels of
        :mod:`xai_core.kernels.conv_forward` instead, counted the same.
        """
        done = self._conv2d(x, weight, bias, geometry, record)
        return super().conv2d(x, weight, bias, geometry, record) if done is None else done[0]

    def conv2d_activated(self, x, weight, bias, geometry, activation):
        """:meth:`conv2d` with a clamping ``activation`` fused into the kernel's epilogue.

        The inference kernels of :mod:`xai_core.kernels.conv_forward` clamp each output as they
        make it (one pass over memory, not a bias pass and an activation pass); the
        activation's elementwise work is counted exactly as ``activation.apply`` would
        count it. Other convolutions take :meth:`Backend.conv2d_activated`.
        """
        bounds = activation.clamp_bounds()
        done = self._conv2d(x, weight, bias, geometry, None, bounds=bounds) if bounds else None
        if done is None:
            return super().conv2d_activated(x, weight, bias, geometry, activation)
        y, finished = done
        if not finished:  # a non-finite depthwise weight: computed unclamped
            return activation.apply(y, self, None)
        self._count_vector(y.size, y.size, y.size * activation.ops)
        return y

    def conv2d_added(self, x, weight, bias, geometry, residual, add):
        """:meth:`conv2d` plus ``residual`` added in the kernel's epilogue.

        The inference kernels of :mod:`xai_core.kernels.conv_forward` add the bias and the
        residual in one pass after the product (the same sums, in the same order, as the
        ``Add`` layer's); the addition is counted exactly as ``add.apply`` would count it.
        Other convolutions take :meth:`Backend.conv2d_added`.
        """
        residual = np.asarray(residual, dtype=self.dtype)
        done = self._conv2d(x, weight, bias, geometry, None, residual=residual)
        if done is None:
            return super().conv2d_added(x, weight, bias, geometry, residual, add)
        y, finished = done
        if not finished:  # a non-finite depthwise weight: computed without the residual
            return add.apply([y, residual], self, None)
        self._count_vector(y.size + residual.size, y.size, y.size)
        return y

    def _conv2d(self, x, weight, bias, geometry, record, bounds=None, residual=None):
        """``(output, finished)`` by the fast paths of :meth:`conv2d`, or None if none applies.

        With ``bounds`` or a ``residual`` only the inference kernels apply, and only when
        :meth:`conv2d` is the cpu's own (a subclass's convolution is never bypassed);
        ``finished`` tells whether they clamped the output to ``bounds`` or added the
        residual (not when a depthwise weight or bias was not finite).
        """
        from xai_core.kernels.conv_forward import conv2d_forward, forward_kind
        from xai_core.kernels.conv_taps import conv2d_taps, fast_kind, taps_input

        kind = fast_kind(x.shape, weight.shape, geometry) if self._reference() else None
        if kind is None:
            return None
        inference = record is None and forward_kind(x.shape, weight.shape, geometry)
        epilogue = bounds is not None or residual is not None
        if epilogue and not (inference and type(self).conv2d is CPUBackend.conv2d):
            return None
        x = np.asarray(x, dtype=self.dtype)
        weight = np.asarray(weight, dtype=self.dtype)
        if bias is not None:
            bias = np.asarray(bias, dtype=self.dtype)
        y = None
        if inference:
            y = conv2d_forward(inference, x, weight, bias, geometry, bounds, residual)
        finished = y is not None and epilogue
        if y is None:
            y, saved = conv2d_taps(kind, x, weight, bias, geometry)
        n, f, oh, ow = y.shape
        g = geometry.groups
        self._count_products(g, n * oh * ow, weight[0].size, f // g)
        if bias is not None:  # added inside the kernel; counted as the im2col path's elementwise
            self._count_vector(y.size + bias.size, y.size, y.size)
        if record is not None:
            record.update(fast=kind, saved=saved, x_hw=x.shape[2:])
            # the input, for the im2col path's backward (a view of the padded copy)
            record["x"] = taps_input(kind, saved, x, geometry)
        return y, finished

    def conv2d_vjp(
        self, grad, weight, geometry, record, *, use_bias, param_grads=True, input_grad=True
    ):
        """Gradients of :meth:`conv2d`, by the adjoint shifted-slice sums when it ran them."""
        from xai_core.kernels.conv_taps import conv2d_taps_vjp

        wanted = {"param_grads": param_grads, "input_grad": input_grad}
        kind = record.get("fast") if self._reference() else None
        if kind is None:
            return super().conv2d_vjp(grad, weight, geometry, record, use_bias=use_bias, **wanted)
        grad = np.asarray(grad, dtype=self.dtype)
        weight = np.asarray(weight, dtype=self.dtype)
        saved, x_hw = record["saved"], record["x_hw"]
        gx, gw = conv2d_taps_vjp(kind, grad, saved, x_hw, weight, geometry, **wanted)
        n, f, oh, ow = grad.shape
        g, m, k = geometry.groups, n * oh * ow, weight[0].size
        grads = {}
        if param_grads:
            self._count_products(g, f // g, m, k)
            grads["weight"] = gw
            if use_bias:
                grads["bias"] = self.reduce(np.sum, grad, axis=(0, 2, 3))
        if input_grad:
            self._count_products(g, m, f // g, k)
        return gx, grads

    def vector_cycles(self, n_ops: int) -> float:
        return float(-(-n_ops // self.simd_width))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "numerics": f"{self.dtype} multiply and accumulate",
            "gradients": True,
            "clock_ghz": self.clock_hz / 1e9,
            "simd_width": self.simd_width,
            "presets": [],
        }


@hookimpl
def xai_register_backends():
    """The reference CPU backend."""
    return [CPUBackend]
