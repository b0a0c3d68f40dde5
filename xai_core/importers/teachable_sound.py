"""Teachable Machine sound projects: speech-commands ``BROWSER_FFT`` transfer models.

The TensorFlow.js export is ``model.json`` (a TF.js layers model: speech-commands' frozen
convolutional base and a ``NewHeadDense`` softmax head), its weight file and a
``metadata.json`` written by the recognizer's ``getMetadata()``::

    {"tfjsSpeechCommandsVersion": "0.4.0", "modelName": "TMv2",
     "timeStamp": "...", "wordLabels": ["Background Noise", "clap", ...]}

(older files name the classes ``words``). The metadata holds no front-end parameters: the
recognizer fixes the sample rate (44,100 Hz) and ``fftSize`` (1024), and reads the frames
and bins per input from the model's input shape ``(frames, bins, 1)`` (43 x 232). Those are
recorded on the model as ``model.preprocessing`` and applied by :func:`prepare_audio`
(:mod:`xai_core.audio` says what of the browser's analyser is reproduced).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError, ValidationError

__all__ = ["is_sound_metadata", "prepare_audio", "sound_labels", "sound_preprocessing"]


def is_sound_metadata(meta: dict[str, Any]) -> bool:
    """Whether a ``metadata.json`` is speech-commands' (``wordLabels``, ``words`` or its version)."""
    return any(k in meta for k in ("wordLabels", "words", "tfjsSpeechCommandsVersion"))


def sound_labels(meta: dict[str, Any], where: str) -> list[str]:
    """The class names: ``wordLabels``, else the legacy ``words`` (as the recognizer reads them)."""
    labels = meta.get("wordLabels", meta.get("words"))
    if not labels:
        raise ModelFormatError(
            f"{where}: a speech-commands metadata.json must name its classes in 'wordLabels' "
            "(or the legacy 'words'); found neither."
        )
    return list(labels)


def sound_preprocessing(model: Any, where: str) -> dict[str, Any]:
    """The front end the model expects, from its input shape ``(frames, bins, 1)``."""
    from xai_core.audio import BROWSER_FFT

    shape = tuple(getattr(model, "input_shape", ()) or ())
    if len(shape) != 3 or shape[2] != 1 or not 1 <= shape[1] <= BROWSER_FFT["fft_size"]:
        raise ModelFormatError(
            f"{where}: a speech-commands BROWSER_FFT model takes spectrograms of shape (frames, "
            f"bins <= {BROWSER_FFT['fft_size']}, 1) (43 x 232 x 1 in Teachable Machine); this "
            f"model takes {shape}."
        )
    return {
        "kind": "spectrogram",
        "front_end": "BROWSER_FFT",
        "sample_rate": BROWSER_FFT["sample_rate"],
        "fft_size": BROWSER_FFT["fft_size"],
        "window": 2 * BROWSER_FFT["fft_size"],
        "frames": int(shape[0]),
        "bins": int(shape[1]),
        "normalize": "z-score",
        "epsilon": BROWSER_FFT["epsilon"],
    }


def prepare_audio(model: Any, clips: Iterable[Any]) -> np.ndarray:
    """WAV files (or mono sample arrays at 44.1 kHz) as the model's inputs.

    Each clip is read (:func:`xai_core.audio.read_wav`: mixed down, resampled), cut to its
    first snippet (43 x 1024 samples), turned into the analyser's dB spectrogram and
    z-normalised, as speech-commands' ``recognize`` feeds its model.

    Parameters
    ----------
    model : Model
        Loaded by :func:`~xai_core.from_teachable_machine` from a sound project.
    clips : iterable of path-like or array_like of float
        Files, or samples in [-1, 1] at the model's sample rate.

    Returns
    -------
    ndarray of float32, shape (n_clips, frames, bins, 1)

    Raises
    ------
    ValidationError
        A model without the recorded front end, or no clips.
    DataError
        A file that is not a readable WAV, or a clip shorter than one snippet.
    """
    from xai_core.audio import browser_fft_spectrogram, normalize_spectrogram, read_wav, snippet

    prep = getattr(model, "preprocessing", None) or {}
    if prep.get("kind") != "spectrogram":
        raise ValidationError(
            "model has no recorded spectrogram front end (load a sound project with "
            "from_teachable_machine)."
        )
    rows = []
    for k, clip in enumerate(clips):
        if isinstance(clip, (str, os.PathLike)):
            samples, what = read_wav(clip, sample_rate=prep["sample_rate"]), repr(str(clip))
        else:
            samples, what = np.asarray(clip, dtype=np.float64), f"clips[{k}]"
            if samples.ndim != 1:
                raise ValidationError(
                    f"clips[{k}] must be mono samples of shape (n_samples,); got an array of "
                    f"shape {samples.shape} (mix channels down first, or pass the WAV file)."
                )
        rows.append(
            snippet(
                samples,
                what,
                fft_size=prep["fft_size"],
                frames=prep["frames"],
                sample_rate=prep["sample_rate"],
            )
        )
    if not rows:
        raise ValidationError("clips must hold at least one clip; got none.")
    spec = browser_fft_spectrogram(
        np.stack(rows), fft_size=prep["fft_size"], frames=prep["frames"], bins=prep["bins"]
    )
    return normalize_spectrogram(spec, prep["epsilon"])[..., None]
