"""Teachable Machine image-project exports, in and out.

An export is a folder or the zip Teachable Machine downloads, holding one of:

- Keras: ``keras_model.h5`` and ``labels.txt``;
- TensorFlow Lite: ``model_unquant.tflite`` (float) or ``model.tflite`` (quantised), and
  ``labels.txt`` (``model_edgetpu.tflite`` is compiled for the Edge TPU and cannot run here);
- TensorFlow.js: ``model.json``, its weight files and ``metadata.json``.

``labels.txt`` has one ``"<index> <name>"`` line per class; ``metadata.json`` a ``labels``
list and an ``imageSize``. Teachable Machine's image models take ``imageSize x imageSize``
RGB images (224 by default) scaled from [0, 255] to [-1, 1] (``pixel / 127.5 - 1``); that
preprocessing is recorded on the model (``model.preprocessing``) and applied by
:func:`prepare_images`.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import DataError, ModelFormatError, ValidationError

__all__ = ["from_teachable_machine", "prepare_images", "read_labels", "to_teachable_machine"]

#: Largest export read (a zip's members are checked against it before they are inflated).
MAX_EXPORT_BYTES = 512 * 2**20
DEFAULT_IMAGE_SIZE = 224


def read_labels(text: str) -> list[str]:
    """Class names from a ``labels.txt``: ``"0 cat"`` lines in index order (a bare name is kept)."""
    labels: dict[int, str] = {}
    for k, line in enumerate(line for line in text.splitlines() if line.strip()):
        head, _, rest = line.strip().partition(" ")
        if head.isdigit() and rest:
            labels[int(head)] = rest.strip()
        else:
            labels[k] = line.strip()
    if sorted(labels) != list(range(len(labels))):
        raise ModelFormatError(
            f"labels.txt must number its classes 0 .. n-1; got {sorted(labels)}."
        )
    return [labels[i] for i in range(len(labels))]


def _members(path: Path) -> dict[str, bytes]:
    """The export's files by base name, from a folder or a zip (sizes checked first)."""
    files: dict[str, bytes] = {}
    if path.is_dir():
        entries = [p for p in path.iterdir() if p.is_file()]
        total = sum(p.stat().st_size for p in entries)
        if total > MAX_EXPORT_BYTES:
            raise ModelFormatError(
                f"the export folder holds {total:,} bytes; at most {MAX_EXPORT_BYTES:,} are read."
            )
        return {p.name: p.read_bytes() for p in entries}
    if not zipfile.is_zipfile(path):
        raise ModelFormatError(
            f"path must be a Teachable Machine export folder or .zip; {str(path)!r} is neither."
        )
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if not i.is_dir()]
        total = sum(i.file_size for i in infos)
        if total > MAX_EXPORT_BYTES:
            raise ModelFormatError(
                f"the zip declares {total:,} bytes inflated; at most {MAX_EXPORT_BYTES:,} are read."
            )
        for info in infos:
            data = z.read(info)
            if len(data) != info.file_size:
                raise ModelFormatError(f"zip member {info.filename!r} is not the size it declares.")
            files[Path(info.filename).name] = data
    return files


def from_teachable_machine(path: str | os.PathLike[str]) -> Any:
    """Load a Teachable Machine image-project export (folder or zip).

    Parameters
    ----------
    path : path-like
        The export folder, or the zip as downloaded.

    Returns
    -------
    Model
        A :class:`~xai_core.importers.tflite.TFLiteModel` for TensorFlow Lite exports, the
        imported network for Keras and TensorFlow.js ones. Its ``output_names`` are the class
        labels and its ``preprocessing`` the input scaling the export expects.

    Raises
    ------
    ModelFormatError
        No model file, no labels, or an Edge TPU-compiled model only.
    """
    path = Path(path)
    if not path.exists():
        raise ModelFormatError(f"path {str(path)!r} does not exist.")
    files = _members(path)
    labels = None
    image_size = DEFAULT_IMAGE_SIZE
    if "metadata.json" in files:
        meta = json.loads(files["metadata.json"].decode("utf-8"))
        labels = [str(x) for x in meta.get("labels", [])] or None
        image_size = int(meta.get("imageSize", DEFAULT_IMAGE_SIZE))
    if "labels.txt" in files:
        labels = read_labels(files["labels.txt"].decode("utf-8"))
    if labels is None:
        raise ModelFormatError(
            "the export has no labels.txt or metadata.json with the class labels."
        )
    preprocessing = {
        "image_size": (image_size, image_size),
        "channels": 3,
        "scale": 1 / 127.5,
        "offset": -1.0,
        "layout": "NHWC",
    }
    for name in ("model_unquant.tflite", "model.tflite"):
        if name in files:
            from xai_core.importers.tflite import from_tflite

            model = from_tflite(files[name], output_names=labels, name=f"{path.name}/{name}")
            preprocessing["image_size"] = tuple(model.input_shape[:2])
            preprocessing["channels"] = int(model.input_shape[-1])
            model.preprocessing = preprocessing
            return model
    if "model_edgetpu.tflite" in files:
        from xai_core.importers.tflite import from_tflite

        from_tflite(files["model_edgetpu.tflite"])  # raises the Edge TPU message
    keras_name = "keras_model.h5" if "keras_model.h5" in files else None
    if keras_name or "model.json" in files:
        from xai_core import from_keras

        with tempfile.TemporaryDirectory() as tmp:
            for name, data in files.items():
                (Path(tmp) / name).write_bytes(data)
            model = from_keras(Path(tmp) / (keras_name or "model.json"))
        return _label(model, labels, preprocessing)
    raise ModelFormatError(
        f"no Teachable Machine model in the export; found {sorted(files)}. Expected keras_model.h5, "
        "model_unquant.tflite / model.tflite, or model.json."
    )


def _label(model: Any, labels: Sequence[str], preprocessing: dict[str, Any]) -> Any:
    n_outputs = getattr(model, "n_outputs", None)
    if n_outputs is not None and n_outputs != len(labels):
        raise ModelFormatError(
            f"the model has {n_outputs} outputs but the export names {len(labels)} classes."
        )
    model.output_names = tuple(labels)
    model.preprocessing = preprocessing
    return model


def prepare_images(model: Any, images: Iterable[Any]) -> np.ndarray:
    """Images (paths, PIL images or uint8 arrays) as the model's inputs, per its ``preprocessing``.

    Returns
    -------
    ndarray of float32, shape (n_images, height, width, channels)
    """
    from PIL import Image

    prep = getattr(model, "preprocessing", None) or {}
    if "image_size" not in prep:
        raise ValidationError(
            "model has no recorded image preprocessing (load it with from_teachable_machine)."
        )
    h, w = prep["image_size"]
    rows = []
    for k, item in enumerate(images):
        if isinstance(item, (str, os.PathLike)):
            try:
                image = Image.open(item)
                image.load()
            except OSError as exc:
                raise DataError(
                    f"images[{k}] ({str(item)!r}) is not a readable image: {exc}"
                ) from exc
        elif isinstance(item, Image.Image):
            image = item
        else:
            image = Image.fromarray(np.asarray(item, dtype=np.uint8))
        # Teachable Machine crops the centre square, then resizes
        side = min(image.size)
        left, top = (image.size[0] - side) // 2, (image.size[1] - side) // 2
        mode = "L" if prep.get("channels", 3) == 1 else "RGB"
        image = (
            image.convert(mode)
            .crop((left, top, left + side, top + side))
            .resize((w, h), Image.BILINEAR)
        )
        rows.append(np.asarray(image, dtype=np.float32).reshape(h, w, -1))
    if not rows:
        raise ValidationError("images must hold at least one image; got none.")
    return (np.stack(rows) * np.float32(prep["scale"]) + np.float32(prep["offset"])).astype(
        np.float32
    )


def to_teachable_machine(
    model: Any, folder: str | os.PathLike[str], labels: Sequence[str], *, calibration_X: Any = None
) -> Path:
    """Write ``model`` as a Teachable Machine TensorFlow Lite export: ``model.tflite`` + ``labels.txt``.

    Parameters
    ----------
    model : TFLiteModel, QuantizedModel or native network
        A float native network needs ``calibration_X`` (it is quantised first).
    folder : path-like
        Created if missing.
    labels : sequence of str
        One class name per output.
    """
    from xai_core.importers.tflite import to_tflite

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    labels = [str(x) for x in labels]
    n_outputs = getattr(model, "n_outputs", None)
    if n_outputs is not None and len(labels) != n_outputs:
        raise ValidationError(f"labels must name the {n_outputs} outputs; got {len(labels)}.")
    to_tflite(model, folder / "model.tflite", calibration_X=calibration_X)
    from xai_core.files import atomic_write

    text = "".join(f"{i} {name}\n" for i, name in enumerate(labels))
    atomic_write(folder / "labels.txt", lambda f: f.write(text.encode("utf-8")))
    return folder
