"""Teachable Machine's TensorFlow Lite export of a trained project, float and int8, and where the Edge TPU runs it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TeachableExport", "export_project"]


@dataclass(frozen=True)
class TeachableExport:
    """The files of one export and the Edge TPU placement of the int8 file.

    Attributes
    ----------
    folder : pathlib.Path
    model_path : pathlib.Path
        ``model.tflite``: float32, the trained network as it is.
    int8_path : pathlib.Path
        ``model_int8.tflite``: full-integer int8 (int8 input and output), calibrated on the
        training rows; the file the Edge TPU compiler takes.
    labels_path : pathlib.Path
        ``labels.txt``: ``"<index> <class name>"`` per line, Teachable Machine's format.
    labels : tuple of str
    placement : pandas.DataFrame
        Per operator of the int8 file, read back with :func:`xai_core.from_tflite`:
        ``operator``, ``op``, ``device`` (``"edgetpu"`` or ``"host"``), ``macs``, ``reason``.
    quantized : QuantizedModel
        The int8 model written, in memory (it runs bit-identically to the file).
    """

    folder: Path
    model_path: Path
    int8_path: Path
    labels_path: Path
    labels: tuple[str, ...]
    placement: Any
    quantized: Any

    @property
    def on_edgetpu(self) -> float:
        """The share of the int8 file's multiply-accumulates the Edge TPU runs, in [0, 1]."""
        macs = self.placement["macs"]
        total = float(macs.sum())
        return float(macs[self.placement["device"] == "edgetpu"].sum()) / total if total else 1.0


def export_project(trainer: Any, folder: str | os.PathLike[str]) -> TeachableExport:
    """Write ``model.tflite``, ``model_int8.tflite`` and ``labels.txt`` for a trained trainer.

    Parameters
    ----------
    trainer : TeachableTrainer
        Trained.
    folder : path-like
        Created if missing; the three files are replaced atomically.

    Returns
    -------
    TeachableExport
    """
    from xai_core import from_tflite, quantize, to_teachable_machine, to_tflite

    labels = tuple(trainer.class_names)
    folder = to_teachable_machine(trainer.net, folder, labels)  # float: no calibration rows
    quantized = quantize(trainer.net, trainer.samples.X[trainer.train_rows], progress=False)
    int8_path = to_tflite(quantized, folder / "model_int8.tflite")
    placement = from_tflite(int8_path, output_names=labels).placement_table()
    return TeachableExport(
        folder=folder,
        model_path=folder / "model.tflite",
        int8_path=Path(int8_path),
        labels_path=folder / "labels.txt",
        labels=labels,
        placement=placement,
        quantized=quantized,
    )
