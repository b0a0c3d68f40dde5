"""``import_model``: the one conversion from what a user passes as a model to a Model.

Every entry point that takes a model calls it: :func:`xai_core.explain`,
:func:`~xai_core.compare_backends`, :func:`~xai_core.compare_methods`,
:func:`~xai_core.faithfulness` and :class:`~xai_core.ModelRunner` (so ``what_if``, the
projector and the ``xai explain`` / ``xai report`` commands too). It lives here, above
the importers, because ``xai_core.model.base`` is below ``xai_core.int8`` (whose models
are ``Model`` subclasses) and may not see the importers; the runner and the callers above
it import this module inside the functions that need it.

What is imported, and how:

=========================================== ==========================================
``torch.nn.Module``                         :func:`~xai_core.from_torch`, traced on the
                                            first rows of ``X`` (its sample shape is the
                                            network's input shape)
``keras.Model`` (Sequential, functional)    :func:`~xai_core.from_keras`
``.onnx``                                   :func:`~xai_core.from_onnx`
``.tflite``                                 :func:`~xai_core.from_tflite`
``.keras``, ``.h5``, ``.hdf5``, ``.json``   :func:`~xai_core.from_keras` (``.json``: TF.js)
``.npz``                                    :func:`~xai_core.load_model` (``net.save``)
``.zip``, a folder                          :func:`~xai_core.from_teachable_machine`
                                            (a folder without labels but with a
                                            ``model.json``: :func:`~xai_core.from_keras`)
=========================================== ==========================================

Anything else goes to :func:`~xai_core.as_model` (a native network as it is; an estimator
or a function of a batch as a black box). To explain a torch module or Keras model as a
black box instead of importing it, pass ``xai.BlackBoxModel(model)``.

The cache
---------
An import is kept, so a second call with the same object does not export again:

- a torch module or Keras model: per object (a weak reference: the import goes when the
  object does), reused while every parameter and buffer is the same tensor (data
  pointer, shape, dtype) at the same version counter (``tensor._version``, which every
  in-place change through the tensor bumps: an optimizer step, ``load_state_dict``,
  ``p.copy_()`` under ``no_grad``), and, for a torch module, ``X`` has the same sample
  shape. Weights of a Keras model that are not torch tensors (a TensorFlow or JAX
  backend) are compared by a digest of their values. Not seen: a change made through
  ``p.data`` (which torch's own autograd does not see either) and a change to a Python
  attribute that changes what ``forward`` computes; import again with
  :func:`~xai_core.from_torch` / :func:`~xai_core.from_keras` then.
- a file: per resolved path, reused while its size and modification time are the same
  (for a folder, those of the files in it); the last :data:`FILE_CACHE_SIZE` files.

``output_names`` is part of every key.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ModelFormatError, ShapeError, ValidationError
from xai_core.model.base import Model, as_model
from xai_core.model.frameworks import is_keras_model, is_torch_module
from xai_core.validation import check_array

__all__ = ["FILE_CACHE_SIZE", "EXAMPLE_ROWS", "MODEL_SUFFIXES", "import_model"]

#: Rows of ``X`` a torch module is traced and checked on.
EXAMPLE_ROWS = 16
#: Imported files kept.
FILE_CACHE_SIZE = 8
#: File suffix -> the importer that reads it (a ``.zip`` or a folder: Teachable Machine).
MODEL_SUFFIXES = {
    ".onnx": "from_onnx",
    ".tflite": "from_tflite",
    ".keras": "from_keras",
    ".h5": "from_keras",
    ".hdf5": "from_keras",
    ".json": "from_keras",
    ".npz": "load_model",
    ".zip": "from_teachable_machine",
}

_BLACK_BOX = (
    "To explain it as a black box instead (predictions only, run on the host), pass "
    'xai.BlackBoxModel(model): xai.explain(xai.BlackBoxModel(model), X, method="shap").'
)

_lock = threading.Lock()
#: object -> (key, imported model); the entry goes with the object.
_objects: weakref.WeakKeyDictionary[Any, tuple[tuple, Model]] = weakref.WeakKeyDictionary()
#: (path, stat, output_names) -> imported model, most recent last.
_files: OrderedDict[tuple, Model] = OrderedDict()


def import_model(
    model: Any,
    X: Any = None,
    *,
    output_names: Sequence[str] | None = None,
) -> Model:
    """Return ``model`` as a :class:`~xai_core.Model`, importing what can be imported.

    Parameters
    ----------
    model : Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        A torch module, a Keras model (one input) or a model file (``.onnx``,
        ``.tflite``, ``.keras``, ``.h5``, TF.js ``.json``, a saved ``.npz`` network, a
        Teachable Machine ``.zip`` or folder) is imported as a native network (gradients,
        every backend), once (see the module's notes on the cache). Anything else goes to
        :func:`~xai_core.as_model`: a native network as it is, an estimator or a function
        of a batch (or ``xai.BlackBoxModel(module)``) as a black box.
    X : array-like of shape (n_samples, *input_shape), optional
        The rows to be explained. Needed for a torch module only: its first
        :data:`EXAMPLE_ROWS` rows are the batch it is traced and checked on, and their
        sample shape the network's input shape (``(channels, height, width)`` for
        images, as in PyTorch).
    output_names : sequence of str, optional
        Class names of a model imported here (by default those the file holds, if any).

    Returns
    -------
    Model

    Raises
    ------
    ValidationError
        ``X`` missing or not numeric for a torch module; a Keras model with several
        inputs; a path that does not exist or whose suffix names no importer;
        ``output_names`` for a model that is not imported here.
    CapabilityError, ModelFormatError
        The import failed: the message says what was imported, names every unsupported
        operator or layer, and how to explain the model as a black box instead.

    Examples
    --------
    >>> xai.explain(torch_module, X)              # what explain does with it
    >>> net = xai.import_model("model.onnx")      # the same network as xai.from_onnx
    """
    names = None if output_names is None else tuple(str(n) for n in output_names)
    if isinstance(model, (str, os.PathLike)):
        return _import_file(Path(model), names)
    if is_keras_model(model):  # first: on the torch backend a Keras model is a torch module too
        _check_one_input(model)
        return _import_object(model, names, _keras_key(model), lambda: _from_keras(model, names))
    if is_torch_module(model):
        example = _example(model, X)
        key = _torch_key(model, example)
        return _import_object(model, names, key, lambda: _from_torch(model, example, names))
    if names is not None:
        raise ValidationError(
            "output_names names the outputs of a model imported here (a torch module, a Keras "
            f"model, a model file); got a {type(model).__name__}, which is not one: give it "
            "its names where it is made."
        )
    return as_model(model)


# -- objects --------------------------------------------------------------------------------


def _import_object(
    obj: Any, names: tuple[str, ...] | None, key: tuple, build: Callable[[], Model]
) -> Model:
    key = (*key, names)
    with _lock:
        hit = _objects.get(obj)
    if hit is not None and hit[0] == key:
        return hit[1]
    model = build()
    with _lock:
        _objects[obj] = (key, model)
    return model


def _tensor_key(t: Any) -> tuple:
    return (t.data_ptr(), t._version, tuple(t.shape), str(t.dtype))


def _example(module: Any, X: Any) -> np.ndarray:
    """The first :data:`EXAMPLE_ROWS` rows of ``X``, float32 (int64 for integer token ids),
    of at least two dimensions."""
    if X is None:
        raise ValidationError(
            f"X: a torch.nn.Module ({type(module).__name__}) takes its input shape from the rows "
            "it explains; pass them (xai.ModelRunner(module, example=X), or "
            "xai.import_model(module, X)), or import it yourself with xai.from_torch(module, "
            "example_input)."
        )
    if hasattr(X, "iloc"):  # a DataFrame
        X = X.iloc[:EXAMPLE_ROWS]
    elif hasattr(X, "__getitem__") and hasattr(X, "__len__") and not isinstance(X, str):
        X = X[:EXAMPLE_ROWS]
    if hasattr(X, "detach") and hasattr(X, "numpy"):  # a torch tensor
        X = X.detach().cpu().numpy()
    ids = np.asarray(X)
    if ids.dtype.kind in "iu":  # token ids: traced as integers (an nn.Embedding's input)
        rows = ids
    else:
        rows = check_array(X, "X")  # NaN refused here, naming X, before any trace
    if rows.ndim < 2:
        raise ShapeError(
            f"X must have shape (n_samples, *input_shape) to import the torch module "
            f"{type(module).__name__}; got an array of shape {rows.shape}."
        )
    kind = np.int64 if ids.dtype.kind in "iu" else np.float32
    return np.ascontiguousarray(rows[:EXAMPLE_ROWS], dtype=kind)


def _torch_key(module: Any, example: np.ndarray) -> tuple:
    """The sample shape of ``example`` and every parameter and buffer's identity and version."""
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return (example.shape[1:], tuple((name, *_tensor_key(t)) for name, t in tensors))


def _from_torch(module: Any, example: np.ndarray, names: tuple[str, ...] | None) -> Model:
    from xai_core.importers import torch_import

    what = f"the torch.nn.Module {type(module).__name__}"
    with _explained_failure(what, black_box=True):
        return torch_import.from_torch(module, example, output_names=names)


def _keras_key(model: Any) -> tuple:
    """Each weight's path and identity and version (torch tensors) or digest of its values."""
    out = []
    for i, v in enumerate(model.weights):
        value = getattr(v, "value", v)
        if hasattr(value, "data_ptr") and hasattr(value, "_version"):
            out.append((i, getattr(v, "path", None), *_tensor_key(value)))
        else:
            from xai_core.importers.keras_import import _numpy

            a = np.ascontiguousarray(_numpy(v))
            digest = hashlib.blake2b(a.tobytes(), digest_size=16).hexdigest()
            out.append((i, getattr(v, "path", None), a.shape, str(a.dtype), digest))
    return (len(model.layers), tuple(out))


def _check_one_input(model: Any) -> None:
    try:
        inputs = list(model.inputs or ())
    except (AttributeError, ValueError):  # a Sequential model not built yet
        return
    if len(inputs) > 1:
        labels = ", ".join(str(getattr(t, "name", i)) for i, t in enumerate(inputs))
        raise ValidationError(
            f"model: the Keras model {getattr(model, 'name', type(model).__name__)!r} has "
            f"{len(inputs)} inputs ({labels}); explain takes one array X, so only models with one "
            "input can be explained. Explain a model of one input, e.g. the inputs concatenated "
            "before the first layer."
        )


def _from_keras(model: Any, names: tuple[str, ...] | None) -> Model:
    from xai_core.importers import keras_import

    what = f"the Keras model {getattr(model, 'name', type(model).__name__)!r}"
    with _explained_failure(what, black_box=True):
        return keras_import.from_keras(model, output_names=names)


# -- files ----------------------------------------------------------------------------------


def _file_key(path: Path) -> tuple:
    stats = [path.stat()]
    if path.is_dir():
        stats += [p.stat() for p in sorted(path.iterdir()) if p.is_file()]
    return tuple((s.st_size, s.st_mtime_ns) for s in stats)


def _import_file(path: Path, names: tuple[str, ...] | None) -> Model:
    if not path.exists():
        raise ValidationError(f"model: no model file or folder at {str(path)!r}.")
    path = path.resolve()
    key = (str(path), _file_key(path), names)
    with _lock:
        hit = _files.get(key)
        if hit is not None:
            _files.move_to_end(key)
            return hit
    model = _read_file(path, names)
    with _lock:
        _files[key] = model
        while len(_files) > FILE_CACHE_SIZE:
            _files.popitem(last=False)
    return model


def _read_file(path: Path, names: tuple[str, ...] | None) -> Model:
    from xai_core import importers
    from xai_core.importers.ir import name_outputs

    suffix = path.suffix.lower()
    if path.is_dir():
        found = {p.name for p in path.iterdir()}
        if found & {"labels.txt", "metadata.json"}:
            suffix = ".zip"  # a Teachable Machine export, unzipped
        elif "model.json" in found:
            suffix = ".json"
        else:
            raise ValidationError(
                f"model: the folder {str(path)!r} holds no model: expected a Teachable Machine "
                "export (labels.txt or metadata.json beside the model) or a TF.js model.json."
            )
    if suffix not in MODEL_SUFFIXES:
        hint = (
            " A PyTorch file holds code as well as weights: load the module with torch and pass "
            "the module."
            if suffix in (".pt", ".pth", ".bin")
            else ""
        )
        raise ValidationError(
            f"model: {path.name!r} is not a model file explain can read: its suffix must be one "
            f"of {', '.join(sorted(MODEL_SUFFIXES))}, or it must be a Teachable Machine folder; "
            f"got {suffix or 'no suffix'!r}.{hint}"
        )
    what = f"the model file {path.name!r}"
    with _explained_failure(what, black_box=False):
        if suffix == ".onnx":
            return importers.from_onnx(path, output_names=names)
        if suffix == ".tflite":
            return importers.from_tflite(path, output_names=names, name=path.name)
        if suffix == ".npz":
            from xai_core.nn import load_model

            return name_outputs(load_model(path), names, {})
        if suffix == ".zip":
            if names is not None:
                raise ValidationError(
                    "output_names: a Teachable Machine export names its classes itself (its "
                    "labels); give no output_names."
                )
            return importers.from_teachable_machine(path)
        return importers.from_keras(path, output_names=names)


# -- failures -------------------------------------------------------------------------------


@contextlib.contextmanager
def _explained_failure(what: str, *, black_box: bool) -> Iterator[None]:
    """Re-raise an importer's CapabilityError or ModelFormatError saying what failed and the way out."""
    try:
        yield
    except (CapabilityError, ModelFormatError) as exc:
        way_out = (
            _BLACK_BOX
            if black_box
            else (
                "To explain it as a black box instead, pass a function of a NumPy batch that runs "
                "it (with onnxruntime or LiteRT, say) wrapped in xai.BlackBoxModel(fn)."
            )
        )
        raise type(exc)(f"model: importing {what} failed: {exc} {way_out}") from exc
