"""Post-training int8 quantisation of a native network, in TensorFlow Lite's int8 scheme.

``xai.quantize(net, calibration_X)`` turns a trained native network (a
:class:`~xai_core.nn.Graph` or :class:`~xai_core.nn.Sequential`) into a
:class:`QuantizedModel` that the Edge TPU (and the TPU v1 preset) can run. The model *is* a
full-integer TFLite graph (:mod:`xai_core.int8.convert`), run by TFLite's int8 kernels
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
  as TFLite does; pools, mean, padding, concatenation and reshapes work on int8 values;
- a grouped convolution is one grouped CONV_2D; a batch norm that folds into no layer
  (after a concatenation, as in DenseNet) is a MUL and an ADD by per-channel constants;
  LeakyReLU, PReLU, GELU, HardSigmoid, reductions, slices and transposes become the
  operators TFLite's converter emits (``docs/tflite.md`` has the table), and every layer
  that cannot be quantised is named, with its reason, before calibration runs.

The integer GEMMs go through ``backend.matmul``. An int8 device (``edgetpu``, ``tpu``
with ``preset="v1"``) receives the int8 operands. A float backend (``cpu``, ``gpu``,
``tpu`` in bf16) receives them as floats in slices of at most 1024 along K: every int8
value is exact in fp32, bf16, tf32 and fp16, and every partial sum is an integer below
``2**24``, so its fp32 accumulation is exact in any order. The result is checked to be
integral and the outputs are bit-identical on every backend; the quantised model on the
``cpu`` backend is the reference for the Edge TPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.int8.numerics import (
    QuantParams,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from xai_core.int8.quantized import QuantizedModel
from xai_core.validation import check_array, check_positive_int

__all__ = [
    "QuantParams",
    "QuantizedModel",
    "quantize",
    "quantize_multiplier",
    "multiply_by_quantized_multiplier",
]

# Defined here before xai_core.int8.numerics held them; ``from xai_core.nn.quantize import ...`` still finds them.
from xai_core.int8.numerics import EXACT_K, QMAX, QMIN, int8_batched_matmul, int8_matmul  # noqa: E402, F401


def _calibrate(
    net: Any, X: np.ndarray, batch_size: int, progress: Any
) -> dict[str, tuple[float, float]]:
    """The range of the input and of every node's output on ``X``, in fp32 on the cpu."""
    from xai_core.backends.cpu import CPUBackend
    from xai_core.int8.convert import converter_for
    from xai_core.progress import progress_bar

    cpu = CPUBackend(dtype=net.dtype)
    lo = {net.input_name: np.inf, **{n.name: np.inf for n in net.nodes}}
    hi = {k: -np.inf for k in lo}
    inside = {n.name: getattr(converter_for(n.layer), "intermediates", None) for n in net.nodes}
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
                if inside[node.name] is not None:  # tensors inside the layer's operators
                    for key, v in inside[node.name](node.layer, args[0]).items():
                        extra = f"{node.name}/{key}"
                        values[extra] = v
                        lo.setdefault(extra, np.inf)
                        hi.setdefault(extra, -np.inf)
            for name, v in values.items():
                lo[name], hi[name] = min(lo[name], float(v.min())), max(hi[name], float(v.max()))
            bar.update(len(values[net.input_name]))
    return {k: (lo[k], hi[k]) for k in lo}


def quantize(net: Any, calibration_X: Any, *, batch_size: int = 1024, progress: Any = None) -> Any:
    """Post-training int8 quantisation in TensorFlow Lite's int8 scheme.

    Parameters
    ----------
    net : xai_core.nn.Graph or xai_core.nn.Sequential
        A trained native network with known input shape. Batch norms are folded into the
        convolution or dense layer before them where they can be; the others become MUL + ADD.
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
    from xai_core.int8.convert import build_int8_graph, check_quantisable
    from xai_core.nn.folding import fuse_gelu
    from xai_core.nn.graph import Graph
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
    if isinstance(folded, Graph):  # PyTorch's exported GELU, one GELU as the converter fuses it
        folded = fuse_gelu(folded, copy=False)
    check_quantisable(folded)  # before calibration runs any layer
    batch_size = check_positive_int(batch_size, "batch_size")
    X = check_array(calibration_X, "calibration_X", feature_shape=net.input_shape, dtype=net.dtype)
    graph, nodes = build_int8_graph(folded, _calibrate(folded, X, batch_size, progress))
    return QuantizedModel(folded, graph, nodes)
