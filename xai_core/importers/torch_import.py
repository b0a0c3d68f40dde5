"""``from_torch``: a PyTorch module, exported to ONNX in memory, as a native graph network.

The module is exported by ``torch.onnx.export`` (the TorchScript exporter, which needs
nothing beyond torch) to bytes in memory, with a dynamic batch axis, and imported by
:func:`~xai_core.importers.onnx_import.from_onnx`. A module whose weights exceed the 2 GiB
protobuf holds is exported into a temporary directory instead, where the exporter keeps
each large weight in a file of its own beside the model (ONNX external data), imported
from there and deleted. The imported network is then run on the
example input, and on a second batch distributed unlike it, and must reproduce the
module's output on both. Where the tracer warns that the trace may hold one path only,
the module is traced again on the second batch: a different network is refused, naming
the lines the tracer warned about; the same one is imported with a warning naming them.
"""

from __future__ import annotations

import contextlib
import filecmp
import inspect
import io
import tempfile
import warnings
from collections.abc import Iterator, Sequence
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


def _trace(
    module: Any, example: Any, opset: int, fold: bool, directory: Path | None = None
) -> tuple[Any, list[str], Any]:
    """The ONNX export of ``module`` traced on ``example``, the tracer's warnings, and the
    module's output on ``example`` (a tensor, or None when it returns something else).

    The export is the model's bytes, or with ``directory`` the path of ``model.onnx``
    written there, the exporter's external data files beside it (it writes them when the
    model exceeds protobuf's 2 GiB). The output is the one the trace computed (kept by a
    forward hook; the copy it makes is read by nothing, so the exported graph is
    unchanged), not a second forward pass.
    """
    torch = _torch()
    buf: Any = io.BytesIO() if directory is None else str(directory / "model.onnx")
    outputs: list[Any] = []

    def keep(mod: Any, args: Any, out: Any) -> None:
        outputs.append(out.detach().clone() if isinstance(out, torch.Tensor) else None)

    was_training = module.training
    module.eval()
    hook = module.register_forward_hook(keep)
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            torch.no_grad(),
            _no_mha_fastpath(torch),
            _example_arguments_only(module, 1),
        ):
            warnings.simplefilter("always")  # recorded: the tracer's own are read below
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
        hook.remove()
        module.train(was_training)
    data = Path(buf) if directory is not None else buf.getvalue()
    return data, _tracer_notes(caught), outputs[0] if len(outputs) == 1 else None


def _same_export(a: Any, b: Any) -> bool:
    """Whether two exports by :func:`_trace` are the same network: equal bytes, or equal
    directories (the model file and every external data file, byte for byte)."""
    if isinstance(a, bytes) or isinstance(b, bytes):
        return a == b
    left, right = (
        sorted(p.name for p in a.parent.iterdir()),
        sorted(p.name for p in b.parent.iterdir()),
    )
    return left == right and all(
        filecmp.cmp(a.parent / name, b.parent / name, shallow=False) for name in left
    )


def export_onnx(module: Any, example: Any, *, opset: int = 17, fold: bool = False) -> bytes:
    """The ONNX bytes of ``module`` traced on ``example`` (batch axis dynamic, eval mode).

    With ``fold=False`` the exporter's constant folding is off, so each batch norm stays a
    node of its own (as in the module) instead of being merged into the convolution.
    Multi-head attention's fused fast path (``aten::_native_multi_head_attention``, which
    has no ONNX form) is switched off while tracing, so attention exports as its matrix
    products and softmax. The tracer's warnings are not reported here; :func:`from_torch`
    checks them.
    """
    return _trace(module, example, opset, fold)[0]


_REWRITE = (
    "Write that step with tensor operations (torch.where, torch.clamp, masks) instead of "
    "Python control flow on tensor values."
)


def _check_trace(
    module: Any, example: Any, data: Any, notes: list[str], strict: bool, large: bool
) -> None:
    """Refuse (or warn about) a trace the tracer warned may hold one path only.

    The module is traced again on a second batch unlike ``example``: a different network
    means the path depends on the input values, which is refused; the same network is
    accepted with an :class:`~xai_core.errors.XaiWarning` naming the lines (a shape test
    such as ``if x.shape[1] == 4`` warns too), unless ``strict``.
    """
    if not notes:
        return
    lines = "; ".join(notes)
    if strict:
        raise CapabilityError(
            f"the tracer warned that the trace may hold only the path example_input took, "
            f"and strict_trace=True refuses that: {lines}. {_REWRITE}"
        )
    with _export_directory(large) as directory:
        other, _, _ = _trace(module, _second_batch(example), 17, False, directory)
        same = _same_export(other, data)
    if not same:
        raise CapabilityError(
            f"the module takes another path on other inputs: traced on example_input and on a "
            f"second batch (-2 * example_input plus noise) it gives two different networks, so "
            f"either would be wrong for the other's inputs. The tracer warned at {lines}. "
            f"{_REWRITE}"
        )
    warnings.warn(
        f"the tracer warned that the trace may hold only the path example_input took: "
        f"{lines}. Traced on a second batch (-2 * example_input plus noise) it gave the same "
        "network, which is checked against the module on both batches; inputs unlike both "
        "may still take another path (strict_trace=True refuses such modules).",
        XaiWarning,
        stacklevel=3,
    )


#: The largest ONNX model protobuf serialises (2 GiB). A module whose weights exceed it (less
#: a margin for the graph itself) is exported into a directory, its weights in external files.
ONNX_LIMIT_BYTES = 2**31 - 2**26


def _weight_bytes(module: Any) -> int:
    """The bytes of the module's parameters and buffers, each shared tensor once."""
    tensors = {id(t): t for t in (*module.parameters(), *module.buffers())}.values()
    return sum(t.numel() * t.element_size() for t in tensors)


@contextlib.contextmanager
def _export_directory(large: bool) -> Iterator[Path | None]:
    """A temporary directory for an export with external data (deleted after), or None
    (the export held in memory) when ``large`` is false."""
    if not large:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="xai-from-torch-") as directory:
        yield Path(directory)


def _module_output(module: Any, X: Any) -> Any:
    """``module``'s output on the batch ``X`` in eval mode, without gradients."""
    torch = _torch()
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return module(X)
    finally:
        module.train(was_training)


def _check_faithful(module: Any, net: nn.Graph, batches: list[tuple[Any, str, Any]]) -> None:
    """Raise unless ``net`` reproduces ``module`` on each batch.

    ``batches`` holds ``(X, label, want)``: a float32 tensor, how messages name it, and the
    module's output on it if already known (else None: computed here). The network runs
    once on all the batches together (its samples do not see each other); the module
    runs on each batch alone, as it was traced.
    """
    wants = [
        (want if want is not None else _module_output(module, X)).detach().cpu().numpy()
        for X, _, want in batches
    ]
    gots = np.split(net.predict(np.concatenate([X.numpy() for X, _, _ in batches])), len(batches))
    for (X, batch, _), want, got in zip(batches, wants, gots):
        _compare(want.reshape(len(X), -1), got, batch)


def _compare(want: np.ndarray, got: np.ndarray, batch: str) -> None:
    """Raise unless the network's outputs ``got`` on ``batch`` are the module's ``want``."""
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


def _is_ids(example: Any) -> bool:
    """Whether ``example`` holds integer token ids (an integer tensor or array)."""
    dtype = getattr(example, "dtype", None)
    if isinstance(example, np.ndarray):
        return example.dtype.kind in "iu"
    return dtype is not None and not dtype.is_floating_point and not dtype.is_complex


def max_positions(module: Any) -> int | None:
    """The most tokens per row a module takes: a ``transformers`` model's
    ``config.max_position_embeddings`` (found on any submodule), else None (no limit known)."""
    for sub in module.modules():
        limit = getattr(getattr(sub, "config", None), "max_position_embeddings", None)
        if isinstance(limit, int) and limit > 0:
            return limit
    return None


def _check_ids_length(module: Any, example: Any) -> None:
    limit = max_positions(module)
    if limit is not None and example.ndim == 2 and example.shape[1] > limit:
        raise ValidationError(
            f"example_input has {example.shape[1]} token ids per row; the module takes at "
            f"most {limit} (its config.max_position_embeddings)."
        )


def _second_batch(example: Any) -> Any:
    """A batch of ``example``'s shape distributed unlike it: ``-2 * example`` plus noise of
    its spread (of 1 for a constant example, so an all-zero one is checked on other values).
    Integer ids: other ids drawn in ``[0, max(example)]``, so they stay in the vocabulary."""
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    if not example.dtype.is_floating_point:
        return torch.randint(0, int(example.max()) + 1, example.shape, generator=g)
    spread = float(example.std()) if example.numel() > 1 else 0.0
    noise = torch.randn(example.shape, generator=g) * (spread if spread > 0 else 1.0)
    return -2.0 * example + noise


def _batch_first(module: Any, axis: int) -> Any:
    """``module`` taking and giving tensors with the batch axis first, when its own have it
    on ``axis`` (``nn.TransformerEncoderLayer(batch_first=False)``: ``(seq, batch, d)``)."""
    torch = _torch()

    class BatchFirst(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.module = module

        def forward(self, x):
            return self.module(x.movedim(0, axis)).movedim(axis, 0)

    return BatchFirst().train(module.training)


def from_torch(
    module: Any,
    example_input: Any,
    *,
    output_names: Sequence[str] | None = None,
    dtype: Any = "float32",
    fold_batch_norm: bool = True,
    strict_trace: bool = False,
    batch_axis: int = 0,
) -> nn.Graph:
    """Import a PyTorch module as a native graph network.

    Parameters
    ----------
    module : torch.nn.Module
        Run in eval mode (batch norm uses its running statistics, dropout is off).
    example_input : torch.Tensor or ndarray of shape (n_samples, *input_shape)
        A batch the export traces; its sample shape becomes the network's ``input_shape``
        (``(channels, height, width)`` for images, NCHW as in PyTorch). An integer batch
        holds token ids (of shape (n_samples, seq_len) for a module starting with
        ``nn.Embedding``): traced as int64; the network then takes the ids (in its float
        dtype, whole numbers checked by :class:`~xai_core.nn.Embedding`).
    output_names : sequence of str, optional
        Class names.
    dtype : {"float32", "float64"}, default="float32"
    fold_batch_norm : bool, default=True
        Merge batch norms into the convolution or dense layer before them where they can
        be, as :func:`~xai_core.importers.from_onnx`.
    strict_trace : bool, default=False
        The module is traced on ``example_input``; where its forward turns a tensor into a
        Python value (``if x.sum() > 0:``, ``float(x.max())``, also ``if x.shape[1] ==
        4:``), the tracer warns that the trace holds only the path that example took.
        Then the module is traced again on a second batch unlike it (``-2 *
        example_input`` plus noise of its spread): if that gives another network, the
        path depends on the values and the module is refused, naming each line the tracer
        warned about; if the same, it is imported with an
        :class:`~xai_core.errors.XaiWarning` naming them. ``True`` refuses every module
        the tracer warns about. Either way the network is checked against the module on
        ``example_input`` and on the second batch.
    batch_axis : int, default=0
        The axis of the module's input and output that holds the batch, for modules that
        are not batch-first (``nn.TransformerEncoderLayer(batch_first=False)`` and
        ``nn.MultiheadAttention`` take ``(seq, batch, features)``: ``batch_axis=1``).
        ``example_input`` is in the module's own layout; the imported network takes and
        gives the batch axis first (``(batch, seq, features)``).

    Returns
    -------
    xai_core.nn.Graph
        Node names are the exporter's (``"/layer1/conv1/Conv"``, following the module
        tree), so ``activations(X, name)`` reads any of them.

    Raises
    ------
    CapabilityError
        A module the exporter emits unsupported ONNX operators for (named); a path that
        depends on the input values (or, with ``strict_trace=True``, any line the tracer
        warns about), naming the lines; arithmetic on the batch size.

    Notes
    -----
    A module whose weights exceed the 2 GiB an ONNX protobuf holds (``vit_h_14``,
    ``regnet_y_128gf``) is exported into a temporary directory, each large weight in a file
    beside the model (ONNX external data), imported from there and deleted; smaller
    modules are exported in memory.
    ModelFormatError
        If the imported network does not reproduce the module on ``example_input`` or on
        the second batch.
    """
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise ValidationError(f"module must be a torch.nn.Module; got {type(module).__name__}.")
    ids = _is_ids(example_input)
    if isinstance(example_input, np.ndarray):
        kind = np.int64 if ids else np.float32
        example_input = torch.from_numpy(np.ascontiguousarray(example_input, dtype=kind))
    if not isinstance(example_input, torch.Tensor) or example_input.ndim < 2:
        raise ValidationError(
            "example_input must be a tensor of shape (n_samples, *input_shape); got "
            f"{type(example_input).__name__} of shape {tuple(getattr(example_input, 'shape', ()))}."
        )
    example_input = example_input.detach().to(torch.int64 if ids else torch.float32)
    if isinstance(batch_axis, bool) or not isinstance(batch_axis, int):
        raise ValidationError(f"batch_axis must be an int; got {batch_axis!r}.")
    if not -example_input.ndim <= batch_axis < example_input.ndim:
        raise ValidationError(
            f"batch_axis must be an axis of example_input (of {example_input.ndim} axes); "
            f"got {batch_axis}."
        )
    batch_axis %= example_input.ndim
    if ids:
        _check_ids_length(module, example_input)
    if batch_axis:
        module = _batch_first(module, batch_axis)
        example_input = example_input.movedim(batch_axis, 0).contiguous()
    large = _weight_bytes(module) > ONNX_LIMIT_BYTES
    with _export_directory(large) as directory:
        data, notes, want = _trace(module, example_input, 17, False, directory)
        _check_trace(module, example_input, data, notes, strict_trace, large)
        net = from_onnx(
            data,
            output_names=output_names,
            dtype=dtype,
            fold_batch_norm=fold_batch_norm,
        )
    second = (_second_batch(example_input), "a second batch (-2 * example_input plus noise)", None)
    _check_faithful(module, net, [(example_input, "example_input", want), second])
    return net
