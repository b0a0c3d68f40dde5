"""``from_torch``: a PyTorch module, exported to ONNX in memory, as a native graph network.

The module is exported by ``torch.onnx.export`` (the TorchScript exporter, which needs
nothing beyond torch) to bytes in memory, with a dynamic batch axis, and imported by
:func:`~xai_core.importers.onnx_import.from_onnx`. The imported network is then run on the
example input, and on a second batch distributed unlike it, and must reproduce the
module's output on both; the tracer's warnings about data-dependent control flow are an
error (or, with ``strict_trace=False``, a warning naming the line).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.errors import CapabilityError, ModelFormatError, ValidationError, XaiWarning
from xai_core.importers.onnx_import import from_onnx
from xai_core.optional import require

__all__ = ["from_torch", "export_onnx"]

#: Largest output difference (relative to the output's scale) accepted on the example.
FAITHFUL_RTOL = 1e-4


def _torch():
    return require("torch", extra="import", need="from_torch")


def _tracer_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    """Each tracer warning as ``file:line (`source`): message``, first sentence only."""
    import linecache

    torch = _torch()
    notes = []
    for w in caught:
        if not issubclass(w.category, torch.jit.TracerWarning):
            continue
        text = str(w.message).split(". ")[0].rstrip(".")
        source = linecache.getline(w.filename, w.lineno).strip()
        where = f"{Path(w.filename).name}:{w.lineno}"
        notes.append(f"{where} (`{source}`): {text}" if source else f"{where}: {text}")
    return list(dict.fromkeys(notes))  # once each, in order


def export_onnx(
    module: Any, example: Any, *, opset: int = 17, fold: bool = False, strict: bool = True
) -> bytes:
    """The ONNX bytes of ``module`` traced on ``example`` (batch axis dynamic, eval mode).

    With ``fold=False`` the exporter's constant folding is off, so each batch norm stays a
    node of its own (as in the module) instead of being merged into the convolution.

    The tracer records the operations ``example`` went through; where the module turns a
    tensor into a Python value (``if x.sum() > 0``, ``float(x.max())``), the tracer
    warns that the trace holds only the branch this example took. With ``strict=True``
    (the default) that is an error naming each such line; with ``strict=False`` it is an
    :class:`~xai_core.errors.XaiWarning` naming them.

    Raises
    ------
    CapabilityError
        With ``strict=True``, when the tracer warned (data-dependent control flow).
    """
    torch = _torch()
    buf = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")  # recorded: the tracer's warnings are read below
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
    notes = _tracer_notes(caught)
    if notes:
        lines = "; ".join(notes)
        if strict:
            raise CapabilityError(
                f"the module's forward turns a tensor into a Python value, so the trace holds "
                f"only the path example_input took and would be wrong for inputs that take "
                f"another: {lines}. Write that step with tensor operations (torch.where, "
                "torch.clamp, masks) instead of Python control flow on tensor values, or pass "
                "strict_trace=False to import anyway (the network is then still checked "
                "against the module on two batches)."
            )
        warnings.warn(
            f"the tracer warned that the trace may hold only the path example_input took: {lines}.",
            XaiWarning,
            stacklevel=3,
        )
    return buf.getvalue()


def _check_faithful(module: Any, net: nn.Graph, X: Any, batch: str) -> None:
    """Raise unless ``net`` reproduces ``module`` on the batch ``X`` (float32 tensor)."""
    torch = _torch()
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            want = module(X).detach().cpu().numpy().reshape(len(X), -1)
    finally:
        module.train(was_training)
    got = net.predict(X.numpy())
    finite = np.isfinite(want)
    if got.shape != want.shape:
        raise ModelFormatError(
            f"the imported network gives outputs of shape {got.shape} on {batch}; the module "
            f"gives {want.shape}."
        )
    scale = max(float(np.abs(want[finite]).max(initial=0.0)), 1.0)
    diff = np.abs(got - want)[finite]
    err = float(diff.max(initial=0.0)) if np.isfinite(got[finite]).all() else float("inf")
    if not err <= FAITHFUL_RTOL * scale:
        raise ModelFormatError(
            f"the imported network differs from the module on {batch} by {err:.3g} "
            f"(allowed {FAITHFUL_RTOL * scale:.3g}): the module computes something its trace "
            "on example_input did not record (control flow on tensor values, or an output "
            "that depends on the batch)."
        )


def _second_batch(example: Any) -> Any:
    """A batch distributed unlike ``example``: it sign-flipped and doubled, and noise of
    its spread (so an all-zero example is still checked on other values)."""
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    spread = float(example.std()) if example.numel() > 1 else 0.0
    noise = torch.randn(example.shape, generator=g) * (spread if spread > 0 else 1.0)
    return torch.cat([-2.0 * example, noise + float(example.mean())])


def from_torch(
    module: Any,
    example_input: Any,
    *,
    output_names: Sequence[str] | None = None,
    dtype: Any = "float32",
    fold_batch_norm: bool = True,
    strict_trace: bool = True,
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
    strict_trace : bool, default=True
        The module is traced on ``example_input``; where its forward turns a tensor into a
        Python value (``if x.sum() > 0:``), the trace records only the path that example
        took. ``True`` refuses such a module, naming each line the tracer warned about;
        ``False`` imports it with an :class:`~xai_core.errors.XaiWarning` naming them.
        Either way the network is checked against the module on ``example_input`` and on
        a second batch unlike it (``-2 * example_input`` and noise of its spread).

    Returns
    -------
    xai_core.nn.Graph
        Node names are the exporter's (``"/layer1/conv1/Conv"``, following the module
        tree), so ``activations(X, name)`` reads any of them.

    Raises
    ------
    CapabilityError
        A module the exporter emits unsupported ONNX operators for (named); data-dependent
        control flow (with ``strict_trace=True``); arithmetic on the batch size.
    ModelFormatError
        If the imported network does not reproduce the module on ``example_input`` or on
        the second batch.
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
        export_onnx(module, example_input, strict=strict_trace),
        output_names=output_names,
        dtype=dtype,
        fold_batch_norm=fold_batch_norm,
    )
    _check_faithful(module, net, example_input, "example_input")
    _check_faithful(
        module, net, _second_batch(example_input), "a second batch (-2 * example_input, noise)"
    )
    return net
