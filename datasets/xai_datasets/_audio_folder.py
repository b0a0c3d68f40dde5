"""Sound folders, Teachable-Machine style: one sub-folder per class, WAV files, as spectrograms."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from xai_core.attribution.cost import Cost, check_cost

from ._class_folders import class_files
from ._dataset import Dataset

__all__ = ["load_audio_folder"]

#: File endings read as sound.
AUDIO_SUFFIXES = (".wav",)
#: Most clips read from one folder.
MAX_CLIPS = 100_000


def load_audio_folder(
    path: str | os.PathLike[str],
    *,
    classes: Sequence[str] | None = None,
    frames: int = 43,
    bins: int = 232,
) -> Dataset:
    """WAV clips in ``path/<class>/*.wav`` as the spectrograms a Teachable Machine sound model hears.

    Each file is read as :func:`xai_core.audio.read_wav` reads it (8-bit, 16-, 24-, 32-bit
    PCM or float; channels mixed down to their mean; another sample rate resampled to
    44,100 Hz), cut to its first ``frames * 1024`` samples (one second), turned into
    speech-commands' analyser spectrogram in dB (:func:`xai_core.audio.browser_fft_spectrogram`:
    2048-point Blackman window, a frame every 1024 samples, the first ``bins`` bins) and
    z-normalised per clip, as speech-commands' recognizer feeds its model.

    Parameters
    ----------
    path : path-like
        A folder with one sub-folder per class; the sub-folder names are the class names.
    classes : sequence of str, optional
        The classes to read, in this order, each once; by default every sub-folder, sorted.
    frames, bins : int, default=43, 232
        The model's input shape ``(frames, bins, 1)`` (Teachable Machine's).

    Returns
    -------
    Dataset
        ``X`` float32 of shape (n_clips, frames * bins), ``image_shape`` ``(frames, bins, 1)``
        (``ds.images`` is the model's input), ``feature_names`` ``"frame <t> bin <k>"``,
        ``class_names`` the sub-folders.

    Raises
    ------
    DataError
        A missing folder, a class folder without WAV files, a file that is not a readable
        WAV file (truncated, damaged, not PCM), or a clip shorter than one snippet (each
        named in the message).
    ValidationError
        ``classes`` naming a folder twice.
    """
    from xai_core.audio import (
        BROWSER_FFT,
        browser_fft_spectrogram,
        normalize_spectrogram,
        read_wav,
        snippet,
    )

    root, names, files = class_files(path, classes, AUDIO_SUFFIXES, "WAV files", MAX_CLIPS)
    hop = BROWSER_FFT["fft_size"]
    check_cost(
        Cost(0, len(files) * frames * (hop + bins) * 8, f"{len(files)} clips of {frames} frames"),
        f"load_audio_folder({str(root)!r})",
    )
    rate = BROWSER_FFT["sample_rate"]
    waves = np.stack(
        [
            snippet(read_wav(f, sample_rate=rate), repr(str(f)), frames=frames, sample_rate=rate)
            for f, _ in files
        ]
    )
    X = normalize_spectrogram(browser_fft_spectrogram(waves, frames=frames, bins=bins))
    y = np.array([label for _, label in files], np.int64)
    return Dataset(
        X=X.reshape(len(files), -1),
        y=y,
        feature_names=tuple(f"frame {t} bin {k}" for t in range(frames) for k in range(bins)),
        class_names=tuple(names),
        image_shape=(frames, bins, 1),
        name=f"sounds from {root.name}",
        description=(
            f"{len(files)} WAV clips in {len(names)} class folders of {str(root)!r}, as "
            f"speech-commands' BROWSER_FFT spectrograms ({frames} x {bins}, z-normalised)."
        ),
        source=str(root),
    )
