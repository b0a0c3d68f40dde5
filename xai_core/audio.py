"""Sound as TensorFlow.js speech-commands' ``BROWSER_FFT`` models hear it: WAV files to spectrograms.

Teachable Machine's sound projects are speech-commands transfer models. In the browser,
speech-commands (``browser_fft_extractor.ts``) opens an ``AudioContext`` at 44,100 Hz,
sets an ``AnalyserNode`` to ``fftSize = 2 * 1024 = 2048`` with ``smoothingTimeConstant = 0``,
and every ``1024 / 44100`` s (23.2 ms) reads ``getFloatFrequencyData``, keeping the first
232 of its 1024 bins (0 .. 4,974 Hz). 43 such frames (1024 x 43 = 44,032 samples, one
second) make one input of shape (43, 232, 1), which the recognizer z-normalises
(``normalize`` in ``browser_fft_utils.ts``: ``(x - mean) / (std + 1e-7)`` over the whole
spectrogram) before the model sees it.

What is reproduced, and how closely:

- **the analyser's frame** (as Chromium's ``realtime_analyser.cc`` computes it): the Web
  Audio specification's Blackman window
  (alpha = 0.16, ``a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)`` for n = 0 .. N-1, N = 2048),
  the DFT scaled by 1/N, its magnitude, and ``20 log10``: exactly, in float64 rounded to
  float32 at the end (browsers compute in float32, so values agree to about 1e-4 dB).
- **smoothing over time**: speech-commands sets ``smoothingTimeConstant`` to 0, so the
  analyser's smoothing ``tau * previous + (1 - tau) * |X|`` is the identity; none is applied.
- **frame timing**: the browser reads the analyser on a JavaScript timer, so its frames
  drift against the audio by a few samples. Here frame k is the 2048 samples ending at
  sample ``1024 * (k + 1)`` (the analyser's buffer of the most recent 2048 samples, zeros
  before the clip starts), the clip's first 44,032 samples in all, as the speech-commands
  converter's preprocessing model (``sc_preproc_model``: 44,032 samples in, a 2048-point
  Blackman window) takes them.
- **silence**: where a frame's magnitude is exactly 0 the browser reports ``-Infinity`` dB
  (the recognizer then skips the frame; the training notebook drops such spectrograms).
  Here magnitudes are floored at ``1e-10`` (-200 dB), so digital silence gives finite inputs.
- **the microphone path**: echo cancellation, gain control and the device's own resampling
  are not reproduced; a WAV file is taken as the samples the analyser would see.

WAV files are read with :func:`scipy.io.wavfile.read`: 8-bit unsigned, 16-, 24- and 32-bit
PCM and 32/64-bit float, scaled to [-1, 1]; several channels are mixed down to their mean
(Web Audio's down-mix of stereo to mono, ``0.5 * (L + R)``); another sample rate is
resampled to 44,100 Hz with :func:`scipy.signal.resample_poly` (a polyphase filter, as the
browser's ``AudioContext`` resamples a source of another rate). A file that is truncated,
not a WAV, or shorter than one snippet is refused with one :class:`~xai_core.errors.DataError`
naming it.
"""

from __future__ import annotations

import io
import os
import warnings
from typing import Any

import numpy as np

from xai_core.errors import DataError, ValidationError

__all__ = [
    "BROWSER_FFT",
    "MAGNITUDE_FLOOR",
    "blackman_window",
    "browser_fft_spectrogram",
    "normalize_spectrogram",
    "read_wav",
    "snippet",
]

#: speech-commands' BROWSER_FFT front end (``browser_fft_recognizer.ts``): the sample rate,
#: its ``fftSize`` (the analyser's is twice it), frames per input, bins kept per frame.
BROWSER_FFT = {
    "sample_rate": 44100,
    "fft_size": 1024,
    "window": 2048,
    "frames": 43,
    "bins": 232,
    "epsilon": 1e-7,
}
#: Smallest magnitude taken to ``20 log10`` (-200 dB); the browser gives ``-inf`` for 0.
MAGNITUDE_FLOOR = 1e-10
#: Largest WAV file read (a guard against pointing at an hour of audio).
MAX_WAV_BYTES = 256 * 2**20
#: Sample rates read (a damaged header's 3 Hz would resample one file into gigabytes).
MIN_RATE, MAX_RATE = 1000, 384_000


def blackman_window(n: int) -> np.ndarray:
    """The Web Audio specification's Blackman window (alpha = 0.16), periodic, float64.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    alpha = 0.16
    k = np.arange(n) / n
    return (1 - alpha) / 2 - 0.5 * np.cos(2 * np.pi * k) + alpha / 2 * np.cos(4 * np.pi * k)


def browser_fft_spectrogram(
    waveforms: Any,
    *,
    fft_size: int = BROWSER_FFT["fft_size"],
    frames: int = BROWSER_FFT["frames"],
    bins: int = BROWSER_FFT["bins"],
) -> np.ndarray:
    """Log-magnitude spectrograms as speech-commands' analyser frames make them (dB, not normalised).

    Parameters
    ----------
    waveforms : array_like of float, shape (n, frames * fft_size)
        Mono samples in [-1, 1] at the model's sample rate (44,100 Hz); one row a snippet.
    fft_size : int, default=1024
        speech-commands' ``fftSize``: the hop between frames; the analyser's window is twice it.
    frames, bins : int, default=43, 232
        Frames per snippet and the bins kept of each (``columnTruncateLength``).

    Returns
    -------
    ndarray of float32, shape (n, frames, bins)
        ``getFloatFrequencyData`` in dB, frame by frame.
    """
    x = np.asarray(waveforms, dtype=np.float64)
    if x.ndim == 1:
        x = x[None]
    need = frames * fft_size
    if x.ndim != 2 or x.shape[1] != need:
        raise ValidationError(
            f"waveforms must have shape (n, {need}) ({frames} frames of {fft_size} samples); got "
            f"an array of shape {np.shape(waveforms)}."
        )
    if not 1 <= bins <= fft_size:
        raise ValidationError(f"bins must be in 1 .. {fft_size}; got {bins}.")
    if not np.isfinite(x).all():
        raise ValidationError("waveforms must be finite; they hold NaN or infinity.")
    window = 2 * fft_size
    padded = np.concatenate([np.zeros((len(x), fft_size)), x], axis=1)
    views = np.lib.stride_tricks.sliding_window_view(padded, window, axis=1)[:, ::fft_size]
    spectrum = np.fft.rfft(views * blackman_window(window), axis=-1)[..., :bins] / window
    magnitude = np.maximum(np.abs(spectrum), MAGNITUDE_FLOOR)
    return (20.0 * np.log10(magnitude)).astype(np.float32)


def normalize_spectrogram(spec: Any, epsilon: float = BROWSER_FFT["epsilon"]) -> np.ndarray:
    """speech-commands' ``normalize``: each spectrogram to zero mean, unit deviation.

    Parameters
    ----------
    spec : array_like of float, shape (n, ...)
    epsilon : float, default=1e-7
        Added to the (population) standard deviation, as TF.js's float32 backends do.

    Returns
    -------
    ndarray of float32, the shape of ``spec``
    """
    s = np.asarray(spec, dtype=np.float64)
    axes = tuple(range(1, s.ndim))
    mean = s.mean(axis=axes, keepdims=True)
    std = s.std(axis=axes, keepdims=True)
    return ((s - mean) / (std + epsilon)).astype(np.float32)


def _scaled(data: np.ndarray, what: str) -> np.ndarray:
    """PCM or float samples as float64 in [-1, 1]."""
    kind, size = data.dtype.kind, data.dtype.itemsize
    if kind == "u" and size == 1:
        return (data.astype(np.float64) - 128.0) / 128.0
    if kind == "i":  # scipy left-justifies 24-bit samples in int32
        return data.astype(np.float64) / float(2 ** (8 * size - 1))
    if kind == "f":
        out = data.astype(np.float64)
        if not np.isfinite(out).all():
            raise DataError(f"{what}: the WAV file holds NaN or infinite samples.")
        return out
    raise DataError(f"{what}: WAV samples of dtype {data.dtype} are not PCM or float audio.")


def read_wav(
    path: str | os.PathLike[str] | bytes, *, sample_rate: int = BROWSER_FFT["sample_rate"]
) -> np.ndarray:
    """A WAV file as mono float64 samples at ``sample_rate`` (mixed down and resampled).

    Parameters
    ----------
    path : path-like or bytes
        The file, or its bytes.
    sample_rate : int, default=44100
        The rate returned; another rate in the file is resampled (polyphase filter).

    Returns
    -------
    ndarray of float64, shape (n_samples,)
        Samples in [-1, 1] (8-bit by 128, 16-, 24-, 32-bit by their full scale; float as is).

    Raises
    ------
    DataError
        Not a file, too large, not a WAV file, truncated or damaged, empty, or not PCM or
        float samples (named in the message).
    """
    from math import gcd

    from scipy.io import wavfile
    from scipy.signal import resample_poly

    what = "the WAV bytes" if isinstance(path, bytes) else repr(str(path))
    if isinstance(path, bytes):
        raw = path
    else:
        from xai_core.files import read_regular_file

        raw = read_regular_file(path, max_bytes=MAX_WAV_BYTES, what=what, error=DataError)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a chunk scipy cannot read is damage, not noise
            rate, data = wavfile.read(io.BytesIO(raw))
    except Exception as exc:
        raise DataError(f"{what} is not a readable WAV file ({exc}).") from exc
    if data.ndim == 2:
        if data.shape[1] == 0:
            raise DataError(f"{what}: the WAV file has no channels.")
        mono = _scaled(data, what).mean(axis=1)
    else:
        mono = _scaled(data, what)
    if mono.size == 0:
        raise DataError(f"{what}: the WAV file holds no samples.")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise DataError(
            f"{what}: the WAV file declares a sample rate of {rate} Hz; audio is read at "
            f"{MIN_RATE:,} .. {MAX_RATE:,} Hz."
        )
    if rate != sample_rate:
        from xai_core.attribution.cost import Cost, check_cost

        out = int(mono.size * sample_rate / rate)
        check_cost(Cost(0, 16 * out, f"{out:,} samples at {sample_rate} Hz"), f"read_wav({what})")
        g = gcd(int(rate), int(sample_rate))
        mono = resample_poly(mono, sample_rate // g, int(rate) // g)
    return mono


def snippet(
    samples: Any,
    what: str = "samples",
    *,
    fft_size: int = BROWSER_FFT["fft_size"],
    frames: int = BROWSER_FFT["frames"],
    sample_rate: int = BROWSER_FFT["sample_rate"],
) -> np.ndarray:
    """The first ``frames * fft_size`` samples of a clip (44,032 at 44.1 kHz), or one clear error.

    Returns
    -------
    ndarray of float64, shape (frames * fft_size,)

    Raises
    ------
    DataError
        A clip shorter than one snippet (its length and the length needed named).
    """
    x = np.asarray(samples, dtype=np.float64).ravel()
    need = frames * fft_size
    if x.size < need:
        raise DataError(
            f"{what} holds {x.size} samples ({x.size / sample_rate:.3f} s at {sample_rate} Hz); "
            f"the model hears {need} ({need / sample_rate:.3f} s). Record or pad clips to at "
            "least that length."
        )
    return x[:need]
