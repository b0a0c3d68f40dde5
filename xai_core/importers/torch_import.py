"""``from_torch``: a PyTorch module, exported to ONNX in memory, as a native graph network.

The module is exported by ``torch.onnx.export`` (the TorchScript exporter, which needs
nothing beyond torch) to bytes in memory, with a dynamic batch axis, and imported by
:func:`~xai_core.importers.onnx_import.from_onnx`. The imported network is then run on the
example input and must reproduce the module's output, so a silently unfaithful import
cannot happen.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.errors import ModelFormatError, ValidationError
from xai_core.importers.onnx_import import from_onnx
from xai_core.optional import require

__all__ = ["from_torch", "export_onnx"]

#: Largest output difference (relative to the output's scale) accepted on the example.
FAITHFUL_RTOL = 1e-4


def _torch():
    return require("torch", extra="import", need="from_torch")


@contextlib.contextmanager
def _no_mha_fastpath(torch: Any) -> Iterator[None]:
    """``torch.backends.mha``'s fast path off for the duration (restored after)."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None:  # an older torch without the switch
        yield
        return
    was = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(was)


@contextlib.contextmanager
def _example_arguments_only(module: Any, n_args: int) -> Iterator[None]:
    """``module.forward`` seen by the exporter as taking only the example's arguments.

    The TorchScript exporter appends every defaulted parameter of ``forward`` to the
    traced inputs, so a flag such as ``TransformerEncoderLayer``'s ``is_causal=False``
    reaches the module as a tensor and breaks it; with the defaults hidden they keep their
    Python values. Node names are unchanged (it is the same module).
    """
    params = list(inspect.signature(module.forward).parameters.values())
    if "forward" in vars(module) or all(p.default is p.empty for p in params[n_args:]):
        yield
        return
    bound = module.forward

    def forward(*args: Any) -> Any:
        return bound(*args)

    forward.__signature__ = inspect.Signature(params[:n_args])  # type: ignore[attr-defined]
    module.forward = forward
    try:
        yield
    finally:
        del module.forward


def export_onnx(module: Any, example: Any, *, opset: int = 17, fold: bool = False) -> bytes:
    """The ONNX bytes of ``module`` traced on ``example`` (batch axis dynamic, eval mode).

    With ``fold=False`` the exporter's constant folding is off, so each batch norm stays a
    node of its own (as in the module) instead of being merged into the convolution.
    Multi-head attention's fused fast path (``aten::_native_multi_head_attention``, which
    has no ONNX form) is switched off while tracing, so attention exports as its matrix
    products and softmax.
    """
    torch = _torch()
    buf = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        with (
            warnings.catch_warnings(),
            torch.no_grad(),
            _no_mha_fastpath(torch),
            _example_arguments_only(module, 1),
        ):
            warnings.simplefilter("ignore")  # the exporter's deprecation and tracer notes
            torch.onnx.export(
                module,
                (example,),
                buf,
                dynamo=False,
                input_names=["input"],
                output_names=["output"],
                dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                opset_version=opset,
                do_constant_folding=fold,
            )
    finally:
        module.train(was_training)
    return buf.getvalue()


def from_torch(
    module: Any,
    example_input: Any,
    *,
    output_names: Sequence[str] | None = None,
    dtype: Any = "float32",
    fold_batch_norm: bool = True,
) -> nn.Graph:
    """Import a PyTorch module as a native graph network.

    Parameters
    ----------
    module : torch.nn.Module
        Run in eval mode (batch norm uses its running statistics, dropout is off).
    example_input : torch.Tensor or ndarray of shape (n_samples, *input_shape)
        A batch the export traces; its sample shape becomes the network's ``input_shape``
        (``(channels, height, width)`` for images, NCHW as in PyTorch).
    output_names : sequence of str, optional
        Class names.
    dtype : {"float32", "float64"}, default="float32"
    fold_batch_norm : bool, default=True
        Merge batch norms into the convolution or dense layer before them where they can
        be, as :func:`~xai_core.importers.from_onnx`.

    Returns
    -------
    xai_core.nn.Graph
        Node names are the exporter's (``"/layer1/conv1/Conv"``, following the module
        tree), so ``activations(X, name)`` reads any of them.

    Raises
    ------
    CapabilityError
        A module the exporter emits unsupported ONNX operators for (named).
    ModelFormatError
        If the imported network does not reproduce the module on ``example_input``.
    """
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise ValidationError(f"module must be a torch.nn.Module; got {type(module).__name__}.")
    if isinstance(example_input, np.ndarray):
        example_input = torch.from_numpy(np.ascontiguousarray(example_input, dtype=np.float32))
    if not isinstance(example_input, torch.Tensor) or example_input.ndim < 2:
        raise ValidationError(
            "example_input must be a tensor of shape (n_samples, *input_shape); got "
            f"{type(example_input).__name__} of shape {tuple(getattr(example_input, 'shape', ()))}."
        )
    example_input = example_input.detach().to(torch.float32)
    net = from_onnx(
        export_onnx(module, example_input),
        output_names=output_names,
        dtype=dtype,
        fold_batch_norm=fold_batch_norm,
    )
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            want = module(example_input).detach().cpu().numpy().reshape(len(example_input), -1)
    finally:
        module.train(was_training)
    got = net.predict(example_input.numpy())
    scale = max(float(np.abs(want).max()), 1.0)
    err = float(np.abs(got - want).max())
    if not err <= FAITHFUL_RTOL * scale:
        raise ModelFormatError(
            f"the imported network differs from the module on example_input by {err:.3g} "
            f"(allowed {FAITHFUL_RTOL * scale:.3g})."
        )
    return net
