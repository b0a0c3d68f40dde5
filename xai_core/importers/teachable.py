"""Teachable Machine exports, in and out: image projects here, sound and pose projects too.

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

A ``metadata.json`` of speech-commands (``wordLabels``) or of ``@teachablemachine/pose``
(``packageName``, ``modelSettings.posenet``) marks a sound or pose project: see
:mod:`~xai_core.importers.teachable_sound` (spectrogram inputs, :func:`prepare_audio`) and
:mod:`~xai_core.importers.teachable_pose` (PoseNet-output inputs, :func:`prepare_poses`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.attribution.cost import Cost, check_cost
from xai_core.errors import CapabilityError, ModelFormatError, ValidationError
from xai_core.files import ZipArchive, read_regular_file
from xai_core.importers.teachable_pose import is_pose_metadata, pose_preprocessing
from xai_core.importers.teachable_sound import (
    is_sound_metadata,
    sound_labels,
    sound_preprocessing,
)
from xai_core.jsonfile import MAX_JSON_BYTES, Int, List, Obj, Str, check, decode_utf8, parse_json

__all__ = [
    "from_teachable_machine",
    "prepare_images",
    "read_labels",
    "read_metadata",
    "to_teachable_machine",
]

#: Largest export read (a zip's members are checked against it before they are inflated).
MAX_EXPORT_BYTES = 512 * 2**20
DEFAULT_IMAGE_SIZE = 224
#: What ``metadata.json`` must hold where it holds it (other keys are kept out of the way).
METADATA = Obj(
    optional={
        "labels": List(Str()),
        "imageSize": Int(lo=1),
        "wordLabels": List(Str()),  # sound projects (speech-commands)
        "words": List(Str()),  # speech-commands' legacy name for wordLabels
        "modelSettings": Obj(optional={"posenet": Obj()}),  # pose projects
    }
)


def read_labels(text: str, where: str = "labels.txt") -> list[str]:
    """Class names from a ``labels.txt``: ``"0 cat"`` lines in index order (a bare name is kept).

    Parameters
    ----------
    text : str
    where : str, default="labels.txt"
        The file, for messages.

    Raises
    ------
    ModelFormatError
        An index given twice, or indices that are not 0 .. n-1.
    """
    labels: dict[int, str] = {}
    for k, line in enumerate(line for line in text.splitlines() if line.strip()):
        head, _, rest = line.strip().partition(" ")
        index, name = (int(head), rest.strip()) if head.isdigit() and rest else (k, line.strip())
        if index in labels:
            raise ModelFormatError(
                f"{where}: class index {index} is given twice ({labels[index]!r} and {name!r})."
            )
        labels[index] = name
    if sorted(labels) != list(range(len(labels))):
        shown = sorted(labels)[:20]
        raise ModelFormatError(
            f"{where}: labels.txt must number its classes 0 .. n-1; got {shown}."
        )
    return [labels[i] for i in range(len(labels))]


def read_metadata(data: bytes, where: str = "metadata.json") -> dict[str, Any]:
    """Teachable Machine's ``metadata.json``, parsed and checked (``labels``, ``imageSize``).

    Returns
    -------
    dict
        The document (an object); its ``labels`` are strings and its ``imageSize`` a
        positive integer where present.

    Raises
    ------
    ModelFormatError
        Not JSON, not UTF-8, too large or deep, or a field of the wrong kind, named.
    """
    meta = parse_json(data, where)
    check(meta, METADATA, where)
    return meta


def _folder_members(path: Path) -> dict[str, bytes]:
    """The regular files of an export folder (inside it, links included), sizes checked first."""
    root = path.resolve()
    entries = []
    for p in sorted(path.iterdir()):
        target = p.resolve()
        if p.is_file() and target.parent == root:
            entries.append((p, target.stat().st_size))
    total = sum(size for _, size in entries)
    if total > MAX_EXPORT_BYTES:
        raise ModelFormatError(
            f"the export folder holds {total:,} bytes; at most {MAX_EXPORT_BYTES:,} are read."
        )
    return {
        p.name: read_regular_file(p, max_bytes=size, what=p.name, error=ModelFormatError)
        for p, size in entries
    }


def _members(path: Path) -> dict[str, bytes]:
    """The export's files by base name, from a folder or a zip (sizes checked first)."""
    if path.is_dir():
        return _folder_members(path)
    files: dict[str, bytes] = {}
    kind = "a Teachable Machine export (a folder or a .zip)"
    with ZipArchive(path, max_total=MAX_EXPORT_BYTES, what=path.name, kind=kind) as z:
        for name in z.names:
            base = Path(name).name
            if base in files or not base:
                others = [n for n in z.names if Path(n).name == base]
                raise ModelFormatError(
                    f"{path.name}: the members {others} share the name {base!r}; an export "
                    "holds each file once."
                )
            text = base.endswith((".json", ".txt"))
            files[base] = z.read(name, max_bytes=MAX_JSON_BYTES if text else MAX_EXPORT_BYTES)
    return files


def _image_size(model: Any, declared: int | None, where: str) -> tuple[int, int]:
    """The model's own image size; a ``metadata.json`` imageSize must agree with it."""
    shape = tuple(getattr(model, "input_shape", ()) or ())
    if len(shape) == 3:
        size = (int(shape[0]), int(shape[1]))
        if declared is not None and declared not in size:  # (Teachable Machine's are square)
            raise ModelFormatError(
                f"{where}: metadata.json declares imageSize {declared}, but the model takes "
                f"{size[0]} x {size[1]} images."
            )
        return size
    side = DEFAULT_IMAGE_SIZE if declared is None else declared
    check_cost(
        Cost(0, side * side * 3 * 4, f"one {side} x {side} RGB image"),
        f"{where}: imageSize {side}",
    )
    return side, side


def from_teachable_machine(path: str | os.PathLike[str]) -> Any:
    """Load a Teachable Machine export (folder or zip): an image, sound or pose project.

    A ``metadata.json`` of speech-commands (``wordLabels``) or of ``@teachablemachine/pose``
    makes it a sound or pose project (TensorFlow.js exports only): the model's
    ``preprocessing`` is then the spectrogram front end (``kind`` ``"spectrogram"``, see
    :func:`~xai_core.importers.teachable_sound.prepare_audio`) or PoseNet's output grid
    (``kind`` ``"posenet"``, with ``feature_names`` per keypoint, channel and cell; see
    :func:`~xai_core.importers.teachable_pose.prepare_poses`).

    Parameters
    ----------
    path : path-like
        The export folder, or the zip as downloaded.

    Returns
    -------
    Model
        A :class:`~xai_core.importers.tflite.TFLiteModel` for TensorFlow Lite exports, the
        imported network for Keras and TensorFlow.js ones. Its ``output_names`` are the class
        labels and its ``preprocessing`` the input scaling the export expects (the image
        size is the model's own input size).

    Raises
    ------
    ModelFormatError
        No model file, no labels, an Edge TPU-compiled model only; a damaged or encrypted
        zip, two members of one name (``a/labels.txt`` and ``b/labels.txt``), a class index
        given twice, a ``metadata.json`` field of the wrong kind, or an ``imageSize`` the
        model does not take.
    """
    path = Path(path)
    if not path.exists():
        raise ModelFormatError(f"path {str(path)!r} does not exist.")
    files = _members(path)
    labels = None
    declared = None
    meta: dict[str, Any] = {}
    if "metadata.json" in files:
        meta = read_metadata(files["metadata.json"], f"{path.name}/metadata.json")
        labels = list(meta.get("labels", [])) or None
        declared = meta.get("imageSize")
    if is_sound_metadata(meta) or is_pose_metadata(meta):
        return _signal_project(path, files, meta)
    if "labels.txt" in files:
        where = f"{path.name}/labels.txt"
        labels = read_labels(decode_utf8(files["labels.txt"], where), where)
    if labels is None:
        raise ModelFormatError(
            "the export has no labels.txt or metadata.json with the class labels."
        )
    preprocessing = {"channels": 3, "scale": 1 / 127.5, "offset": -1.0, "layout": "NHWC"}
    for name in ("model_unquant.tflite", "model.tflite"):
        if name in files:
            from xai_core.importers.tflite import from_tflite

            model = from_tflite(files[name], output_names=labels, name=f"{path.name}/{name}")
            preprocessing["image_size"] = _image_size(model, declared, path.name)
            preprocessing["channels"] = int(model.input_shape[-1])
            model.preprocessing = preprocessing
            return model
    if "soundclassifier_with_metadata.tflite" in files or "soundclassifier.tflite" in files:
        raise CapabilityError(
            f"{path.name}: this is Teachable Machine's TensorFlow Lite sound export, whose graph "
            "takes the raw 44,032-sample waveform through the converter's spectrogram model; it "
            "is not imported. Download the TensorFlow.js export of the project instead (model.json, "
            "weights.bin, metadata.json): it imports with the same front end (docs/audio.md)."
        )
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
        preprocessing["image_size"] = _image_size(model, declared, path.name)
        if len(model.input_shape) == 3:  # NHWC, as Keras lays images out
            preprocessing["channels"] = int(model.input_shape[-1])
        return _label(model, labels, preprocessing)
    raise ModelFormatError(
        f"no Teachable Machine model in the export; found {sorted(files)}. Expected keras_model.h5, "
        "model_unquant.tflite / model.tflite, or model.json."
    )


def _signal_project(path: Path, files: dict[str, bytes], meta: dict[str, Any]) -> Any:
    """A sound or pose project's TF.js export: the model, its labels and its input's front end."""
    where = f"{path.name}/metadata.json"
    sound = is_sound_metadata(meta)
    if "model.json" not in files:
        kind = "sound" if sound else "pose"
        raise ModelFormatError(
            f"{path.name}: a Teachable Machine {kind} export needs model.json (the TensorFlow.js "
            f"export); found {sorted(files)}."
        )
    model = _tfjs_model(files)
    if sound:
        labels = sound_labels(meta, where)
        return _label(model, labels, sound_preprocessing(model, path.name))
    from xai_core.pose import posenet_feature_names

    labels = list(meta.get("labels", []))
    if not labels:
        raise ModelFormatError(f"{where}: a pose project's metadata.json names no labels.")
    prep = pose_preprocessing(model, meta, path.name)
    model = _label(model, labels, prep)
    model.feature_names = posenet_feature_names(prep["grid"])
    return model


def _tfjs_model(files: dict[str, bytes]) -> Any:
    """The TF.js layers model of an export, its files written to a private folder first."""
    from xai_core import from_keras

    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        return from_keras(Path(tmp) / "model.json")


def _label(model: Any, labels: Sequence[str], preprocessing: dict[str, Any]) -> Any:
    n_outputs = getattr(model, "n_outputs", None)
    if n_outputs is not None and n_outputs != len(labels):
        raise ModelFormatError(
            f"the model has {n_outputs} outputs but the export names {len(labels)} classes."
        )
    model.output_names = tuple(labels)
    model.preprocessing = preprocessing
    return model


def _array_image(item: Any, k: int) -> Any:
    """An array image as a PIL image, its values checked: never wrapped around."""
    from PIL import Image

    from xai_core.images import value_span

    arr = np.asarray(item)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (2, 3, 4)) or not arr.size:
        raise ValidationError(
            f"images[{k}] must be an image of shape (height, width) or (height, width, 1 | 3 | "
            f"4); got an array of shape {arr.shape}."
        )
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 1:
            raise ValidationError(
                f"images[{k}]: a float image must hold fractions in [0, 1]; its values "
                f"{value_span(arr)}. Give 0..255 pixels as uint8."
            )
        arr = np.rint(arr * 255.0)
    elif arr.dtype.kind in "iu":
        if arr.min() < 0 or arr.max() > 255:
            raise ValidationError(
                f"images[{k}]: an integer image must hold pixels in 0..255; its values span "
                f"{arr.min()} .. {arr.max()} (scale 16-bit images to 0..255 first)."
            )
    else:
        raise ValidationError(
            f"images[{k}] must hold numbers (uint8 pixels or float fractions); got dtype "
            f"{arr.dtype}."
        )
    return Image.fromarray(arr.astype(np.uint8))


def prepare_images(model: Any, images: Iterable[Any]) -> np.ndarray:
    """Images (paths, PIL images or arrays) as the model's inputs, per its ``preprocessing``.

    Arrays are refused, never wrapped, when their values are out of range: integer arrays
    must hold pixels in 0..255, float arrays fractions in [0, 1] (rounded to 8-bit pixels,
    as Teachable Machine's canvas holds them). Files and PIL images are scaled by their
    mode's range (16-bit PNGs included, :func:`xai_core.images.image_pixels`).

    Returns
    -------
    ndarray of float32, shape (n_images, height, width, channels)

    Raises
    ------
    ValidationError
        No recorded preprocessing, no images, an array of the wrong shape or out of range.
    DataError
        A file that is missing, not a regular file, not an image, or a decompression bomb.
    ResourceError
        Images of the recorded size would not fit the memory limit.
    """
    from PIL import Image

    from xai_core.images import image_pixels, open_image

    prep = getattr(model, "preprocessing", None) or {}
    if "image_size" not in prep:
        raise ValidationError(
            "model has no recorded image preprocessing (load it with from_teachable_machine)."
        )
    h, w = (int(v) for v in prep["image_size"])
    channels = 1 if prep.get("channels", 3) == 1 else 3
    if h < 1 or w < 1:
        raise ValidationError(f"model.preprocessing['image_size'] must be positive; got {(h, w)}.")
    check_cost(Cost(0, 2 * h * w * channels * 4, f"one {h} x {w} image"), "prepare_images")
    rows = []
    for k, item in enumerate(images):
        if isinstance(item, (str, os.PathLike)):
            image = open_image(item, what=f"images[{k}] ({str(item)!r})")
        elif isinstance(item, Image.Image):
            image = item
        else:
            image = _array_image(item, k)
        # Teachable Machine crops the centre square, then resizes
        rows.append(image_pixels(image, channels=channels, size=(h, w), what=f"images[{k}]"))
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
