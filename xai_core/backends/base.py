"""The backend protocol: the few primitives a network needs, and what they cost.

Layers own their forward and backward passes and call the backend for every matrix
product, elementwise operation and reduction, so predictions *and* gradients run in the
backend's numerics and are counted by it. The ``cpu`` backend is the reference; every
other backend is tested against it (:func:`xai_core.testing.check_backend`).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, UnknownNameError, ValidationError

__all__ = ["Backend", "check_stacks"]

#: Counter methods that run under the backend's lock (besides every ``_count_*`` method).
_LOCKED = ("_add", "reset_counters")


def matmul_operands(
    a: Any, b: Any, *, numeric: bool = True, what: str = "matmul operands"
) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as arrays of shapes (M, K) and (K, N), M, K, N >= 1, else a clear error.

    With ``numeric``, also a ValidationError unless both hold numbers (bool, int, float).
    ``what`` names the two operands in the messages.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or 0 in a.shape or 0 in b.shape:
        raise ShapeError(
            f"{what} must have shapes (M, K) and (K, N) with M, K, N >= 1; "
            f"got {a.shape} and {b.shape}."
        )
    if numeric and (a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf"):
        raise ValidationError(f"{what} must be numeric; got {a.dtype} and {b.dtype}.")
    return a, b


def check_settings(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise unless ``cls(*args, **kwargs)`` names only keywords of the constructor.

    An unknown keyword is an :class:`UnknownNameError` listing the backend's settings (not
    Python's ``TypeError``); too many positional arguments a :class:`ValidationError`.
    """
    params = inspect.signature(cls.__init__).parameters
    kinds = {p.kind for p in params.values()}
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        named = [
            k
            for k, p in params.items()
            if k != "self"
            and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        for key in kwargs:
            if key not in named:
                label = getattr(cls, "name", cls.__name__)
                raise UnknownNameError(f"{label} backend setting", key, named)
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        positional = [
            k
            for k, p in params.items()
            if k != "self" and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]
        if len(args) > len(positional):
            raise ValidationError(
                f"{getattr(cls, 'name', cls.__name__)} takes at most {len(positional)} positional "
                f"setting(s) ({', '.join(positional) or 'none'}); got {len(args)}: {args!r}. "
                "Pass the others by keyword."
            )


def _locked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run while holding its backend's counter lock."""
    if getattr(fn, "_holds_counter_lock", False):
        return fn

    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._counter_lock:
            return fn(self, *args, **kwargs)

    method._holds_counter_lock = True  # type: ignore[attr-defined]
    return method


def check_stacks(a: np.ndarray, b: np.ndarray) -> None:
    """Raise a :class:`ShapeError` unless ``a`` (G, M, K) and ``b`` (G, K, N) stack products."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ShapeError(
            "batched_matmul needs a of shape (groups, M, K) and b of shape (groups, K, N); "
            f"got a {a.shape} and b {b.shape}."
        )
    if a.shape[0] == 0:
        raise ShapeError("batched_matmul needs at least one product; got groups = 0.")


def _channels_last(a: np.ndarray) -> bool:
    return a.strides[1] < a.strides[3]


def one_memory_order(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """``arrays`` with every full 4-D operand in the memory order of the first one.

    A convolution may leave an NCHW-shaped batch in channels-last memory; numpy's
    elementwise loops run many times slower on operands of mixed memory orders, so the
    odd ones out are copied into the first one's order. Values and shapes are unchanged.
    """
    quads = [
        i
        for i, a in enumerate(arrays)
        if a.ndim == 4 and 0 not in a.strides and a.shape[1] > 1 and a.shape[3] > 1
    ]
    if len(quads) < 2:
        return arrays
    want = _channels_last(arrays[quads[0]])
    out = list(arrays)
    for i in quads[1:]:
        a = arrays[i]
        if _channels_last(a) != want:
            if want:
                out[i] = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
            else:
                out[i] = np.ascontiguousarray(a)
    return out


class Backend:
    """Base class of the simulated hardware backends.

    Subclasses set :attr:`name`, implement :meth:`matmul` and may override
    :meth:`elementwise`, :meth:`reduce` and :meth:`describe`. Counters are plain numbers
    kept in ``self._counters``; :attr:`counters` returns a copy. Counting is thread-safe:
    :meth:`_add`, :meth:`reset_counters`, :attr:`counters` and every ``_count_*`` method
    (a subclass's too) run under one re-entrant lock per backend, so one backend shared
    by many threads counts exactly what they ran.

    Attributes
    ----------
    name : str
        The registry name (``"cpu"``, ``"tpu"``, ...).
    supports_gradients : bool
        Whether backward passes may run on this backend.
    requires_quantized : bool
        Whether the backend runs only int8-quantised models (the Edge TPU).
    runs_black_boxes : bool
        Whether a black-box model (one that runs on the host and never calls the backend)
        is explained here as it is: true for the CPU, which is the host; on simulated
        hardware a black box would only repeat the host's numbers, so
        :func:`~xai_core.compare_backends` skips it there.
    dtype : numpy.dtype
        The floating-point dtype of activations and elementwise work.
    number_format : str
        The coarsest number format the backend multiplies in (``"fp32"``, ``"bf16"``,
        ``"int8"``, ...): the rounding :func:`~xai_core.compare_backends` expects of it
        (:data:`xai_core.compare.verdict.UNIT_ROUNDOFF`). By default :attr:`dtype`'s.
    """

    name: ClassVar[str] = "abstract"
    supports_gradients: ClassVar[bool] = True
    requires_quantized: ClassVar[bool] = False
    runs_black_boxes: ClassVar[bool] = False

    #: Counters every backend reports; backends add their own.
    COMMON_COUNTERS: ClassVar[tuple[str, ...]] = (
        "matmuls",
        "macs",
        "elementwise_ops",
        "bytes_read",
        "bytes_written",
        "cycles",
        "est_seconds",
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> Backend:
        check_settings(cls, args, kwargs)
        self = super().__new__(cls)
        self._init_args = (args, kwargs)  # for config(): how to build this backend again
        self._counter_lock = threading.RLock()
        return self

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for key, fn in list(cls.__dict__.items()):
            if callable(fn) and (key.startswith("_count_") or key in _LOCKED):
                setattr(cls, key, _locked(fn))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_counter_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._counter_lock = threading.RLock()

    def __init__(self, dtype: Any = np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self._counters: dict[str, float] = {}
        self.reset_counters()

    # -- primitives -------------------------------------------------------------------
    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Matrix product in the backend's numerics.

        Parameters
        ----------
        a : ndarray of shape (M, K)
        b : ndarray of shape (K, N)

        Returns
        -------
        ndarray of shape (M, N)
        """
        raise NotImplementedError

    def matmul_into(
        self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """:meth:`matmul`, written into ``out`` when given: the same numerics and counters.

        For passes that keep their buffers from one call to the next (the fused gradient
        passes of :mod:`xai_core.nn.fused`). The default copies :meth:`matmul`'s product; a
        backend may compute it in place, counting the same.

        Parameters
        ----------
        a : ndarray of shape (M, K)
        b : ndarray of shape (K, N)
        out : ndarray of shape (M, N) of :attr:`dtype`, optional

        Returns
        -------
        ndarray of shape (M, N)
            ``out`` when given.
        """
        product = self.matmul(a, b)
        if out is None:
            return product
        np.copyto(out, product)
        return out

    def batched_matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """A stack of independent matrix products ``a[i] @ b[i]`` (a grouped convolution's).

        The default runs each product through :meth:`matmul`, so the numerics and the
        counters are exactly those of ``groups`` separate calls (``matmuls`` grows by
        ``groups``). A backend may override it with a faster equivalent that counts the same.

        Parameters
        ----------
        a : ndarray of shape (groups, M, K)
        b : ndarray of shape (groups, K, N)

        Returns
        -------
        ndarray of shape (groups, M, N)
        """
        a, b = np.asarray(a), np.asarray(b)
        check_stacks(a, b)
        return np.stack([self.matmul(ai, bi) for ai, bi in zip(a, b)])

    def conv2d(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        geometry: Any,
        record: dict | None = None,
    ) -> np.ndarray:
        """A 2-D convolution (cross-correlation), by default lowered to this backend's products.

        The default is :func:`~xai_core.kernels.conv_ops.conv2d_im2col`: one :meth:`matmul`
        (``groups = 1``) or :meth:`batched_matmul` (``groups > 1``) of the im2col column
        matrix, and the bias as one :meth:`elementwise`, so a backend that keeps it
        computes, and counts, every product in its own numerics. A backend may override
        it with a faster equivalent that counts the same (the ``cpu`` backend computes
        common cases without im2col: :mod:`xai_core.kernels.conv_taps`).

        Parameters
        ----------
        x : ndarray of shape (n, channels, height, width)
            NCHW-shaped, of any memory order.
        weight : ndarray of shape (filters, channels // groups, kh, kw)
        bias : ndarray of shape (filters,) or None
        geometry : xai_core.kernels.conv_ops.ConvGeometry
            Kernel size, strides, ``(top, bottom, left, right)`` padding, dilation, groups.
        record : dict, optional
            Filled with what :meth:`conv2d_vjp` needs.

        Returns
        -------
        ndarray of shape (n, filters, out_height, out_width)
        """
        from xai_core.kernels.conv_ops import conv2d_im2col

        return conv2d_im2col(self, x, weight, bias, geometry, record)

    def conv2d_activated(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        geometry: Any,
        activation: Any,
    ) -> np.ndarray:
        """:meth:`conv2d` (inference, no record) followed by the layer ``activation``.

        The executor asks for it when a convolution's only consumer is an activation that
        clamps (ReLU, ReLU6, Clip). The default runs :meth:`conv2d`, then
        ``activation.apply`` on this backend, exactly as the two layers would separately;
        a backend may fuse the activation into the convolution's epilogue (the ``cpu``
        backend does) if it computes, and counts, the same.

        Parameters
        ----------
        x, weight, bias, geometry
            As for :meth:`conv2d`.
        activation : xai_core.nn.activations.Activation
            Its :meth:`~xai_core.nn.activations.Activation.clamp_bounds` were not None
            when the pass was planned; a backend reads them again on every call.

        Returns
        -------
        ndarray of shape (n, filters, out_height, out_width)
        """
        return activation.apply(self.conv2d(x, weight, bias, geometry, None), self, None)

    def conv2d_added(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        geometry: Any,
        residual: np.ndarray,
        add: Any,
    ) -> np.ndarray:
        """:meth:`conv2d` (inference, no record) plus ``residual``, as the layer ``add`` sums them.

        The executor asks for it when a convolution's only consumer is the ``Add`` of a
        residual connection. The default runs :meth:`conv2d`, then ``add.apply`` on this
        backend, exactly as the two layers would separately; a backend may add the
        residual in the convolution's epilogue (the ``cpu`` backend does) if it computes,
        and counts, the same.

        Parameters
        ----------
        x, weight, bias, geometry
            As for :meth:`conv2d`.
        residual : ndarray of shape (n, filters, out_height, out_width)
            The ``Add``'s other input.
        add : xai_core.nn.merge.Add

        Returns
        -------
        ndarray of shape (n, filters, out_height, out_width)
        """
        return add.apply([self.conv2d(x, weight, bias, geometry, None), residual], self, None)

    def conv2d_vjp(
        self,
        grad: np.ndarray,
        weight: np.ndarray,
        geometry: Any,
        record: dict,
        *,
        use_bias: bool,
        param_grads: bool = True,
        input_grad: bool = True,
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        """Gradients of :meth:`conv2d` for ``grad`` (n, filters, out_height, out_width).

        The default is :func:`~xai_core.kernels.conv_ops.conv2d_im2col_vjp` (the products of
        the column matrix, then col2im). Returns ``(grad_x or None, {"weight": ...,
        "bias": ...})``, the parameter gradients only with ``param_grads`` (``bias`` only
        with ``use_bias``).
        """
        from xai_core.kernels.conv_ops import conv2d_im2col_vjp

        return conv2d_im2col_vjp(
            self,
            grad,
            weight,
            geometry,
            record,
            use_bias=use_bias,
            param_grads=param_grads,
            input_grad=input_grad,
        )

    def elementwise(
        self, fn: Callable[..., np.ndarray], *arrays: np.ndarray, ops: int = 1
    ) -> np.ndarray:
        """Apply ``fn`` elementwise on the backend's vector unit and count it.

        Parameters
        ----------
        fn : callable
            A numpy function of the arrays (``np.maximum``, ``lambda x: 1 / (1 + np.exp(-x))``).
        *arrays : ndarray
            Operands; they are cast to :attr:`dtype` first.
        ops : int, default=1
            Arithmetic operations per output element, for the cycle estimate.

        Returns
        -------
        ndarray of :attr:`dtype`, the broadcast shape of the operands.
        """
        cast = one_memory_order([np.asarray(x, dtype=self.dtype) for x in arrays])
        out = np.asarray(fn(*cast), dtype=self.dtype)
        self._count_vector(sum(x.size for x in cast), out.size, out.size * ops)
        return out

    def reduce(
        self, fn: Callable[..., np.ndarray], x: np.ndarray, axis: int | tuple[int, ...] | None
    ) -> np.ndarray:
        """Reduce ``x`` with ``fn`` (``np.sum``, ``np.max``) along ``axis`` and count it."""
        x = np.asarray(x, dtype=self.dtype)
        out = np.asarray(fn(x, axis=axis), dtype=self.dtype)
        self._count_vector(x.size, out.size, x.size)
        return out

    # -- data parallelism (no-ops on one device; see backends/pod.py) --------------------
    def begin_batch(self, x: np.ndarray) -> None:
        """A batch ``x`` of shape (n, ...) starts: a pod shards its rows over its devices."""

    def end_batch(self, out: Any) -> None:
        """The batch's result ``out`` is complete: a pod gathers it from its devices."""

    def all_reduce(self, grads: list[np.ndarray]) -> list[np.ndarray]:
        """Sum per-device gradients over the devices (a pod costs it); returns ``grads``."""
        return grads

    # -- counters ---------------------------------------------------------------------
    @property
    def counters(self) -> dict[str, float]:
        """A copy of the counters (``macs``, ``cycles``, ``bytes_read``, ``est_seconds``, ...)."""
        with self._counter_lock:
            return dict(self._counters)

    def reset_counters(self) -> None:
        """Set every counter to zero."""
        self._counters = dict.fromkeys(self.COMMON_COUNTERS + self.extra_counters(), 0)

    def extra_counters(self) -> tuple[str, ...]:
        """Names of backend-specific counters, zeroed by :meth:`reset_counters`."""
        return ()

    def count_elementwise(self, n_in: int, n_out: int, n_ops: int) -> None:
        """Count elementwise work a caller did itself in this backend's numerics.

        As :meth:`elementwise` counts a call: ``n_in`` elements read, ``n_out`` written,
        ``n_ops`` operations (turned into cycles by :meth:`vector_cycles`). For passes that
        apply activations in place on the backend's products (:mod:`xai_core.nn.fused`),
        which only backends with :attr:`exact_operands` allow.
        """
        self._count_vector(int(n_in), int(n_out), int(n_ops))

    @property
    def exact_operands(self) -> bool:
        """Whether this backend's numerics are plain numpy arithmetic in :attr:`dtype`.

        True when :meth:`matmul` multiplies its operands as given in :attr:`dtype` (no
        rounding to a narrower type first, in any order of summation) and
        :meth:`elementwise` and :meth:`reduce` are numpy's in :attr:`dtype`. Products may
        then be regrouped (``W (b + a (x - b)) = W b + a (W x - W b)``) and activations
        applied in place on them with no change beyond :attr:`dtype`'s rounding: the
        condition of the runner's gradient fast paths (:mod:`xai_core.model.paths`,
        :mod:`xai_core.nn.fused`). False by default; ``cpu`` and ``gpu`` at fp32 say True,
        backends that round operands (bf16, int8, tf32, fp16) say False.
        """
        return False

    def _add(self, **amounts: float) -> None:
        for key, value in amounts.items():
            self._counters[key] = self._counters.get(key, 0) + value

    def _count_vector(self, n_in: int, n_out: int, n_ops: int) -> None:
        """Count elementwise work; subclasses turn it into cycles in :meth:`vector_cycles`."""
        cycles = self.vector_cycles(n_ops)
        size, c = self.dtype.itemsize, self._counters  # (every common counter exists)
        c["elementwise_ops"] += n_ops
        c["bytes_read"] += n_in * size
        c["bytes_written"] += n_out * size
        c["cycles"] += cycles
        c["est_seconds"] += cycles / self.clock_hz

    #: Clock in Hz for ``est_seconds``; subclasses and presets set it.
    clock_hz: float = 1e9

    def vector_cycles(self, n_ops: int) -> float:
        """Cycles the vector unit needs for ``n_ops`` elementwise operations."""
        return float(n_ops)

    # -- description ------------------------------------------------------------------
    @property
    def number_format(self) -> str:
        """The format of the products: ``"fp64"``, ``"fp32"`` or ``"fp16"`` from :attr:`dtype`."""
        return {"float64": "fp64", "float32": "fp32", "float16": "fp16"}.get(
            self.dtype.name, self.dtype.name
        )

    def describe(self) -> dict[str, Any]:
        """Name, numerics and settings, for ``xai backends`` and report provenance."""
        return {
            "name": self.name,
            "numerics": str(self.dtype),
            "gradients": self.supports_gradients,
        }

    def config(self) -> dict[str, Any]:
        """Registry name and constructor arguments: ``get_backend(c["name"], **c["settings"])``
        builds this backend again (in another process, for instance)."""
        args, kwargs = getattr(self, "_init_args", ((), {}))
        bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        params = inspect.signature(type(self).__init__).parameters
        settings: dict[str, Any] = {}
        for key, value in list(bound.arguments.items())[1:]:
            if params[key].kind is inspect.Parameter.VAR_KEYWORD:
                settings.update(value)
            else:
                settings[key] = value
        return {"name": self.name, "settings": settings}

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "name")
        return f"{type(self).__name__}({settings})"


for _key in ("_add", "reset_counters", "_count_vector"):
    setattr(Backend, _key, _locked(getattr(Backend, _key)))
