"""xai_core.audio: WAV files read, mixed down, resampled, and speech-commands' analyser spectrogram."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from scipy.io import wavfile
from scipy.signal import get_window

import xai_core as xai
from xai_core.audio import (
    BROWSER_FFT,
    blackman_window,
    browser_fft_spectrogram,
    normalize_spectrogram,
    read_wav,
    snippet,
)

RATE = BROWSER_FFT["sample_rate"]
N = BROWSER_FFT["frames"] * BROWSER_FFT["fft_size"]


def pcm24(path, rate, samples):
    """A 24-bit PCM mono WAV written byte by byte (scipy writes no 24-bit files)."""
    ints = np.round(np.asarray(samples) * (2**23 - 1)).astype(np.int32)
    data = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 3, 3, 24)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data))
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body) + len(data)) + body + data)
    return path


def test_the_window_is_scipys_exact_blackman():
    """Web Audio's Blackman (alpha 0.16) is the classic one; periodic, as the DFT frame takes it."""
    np.testing.assert_allclose(blackman_window(2048), get_window("blackman", 2048), atol=1e-12)


def test_a_sine_on_a_bin_peaks_at_that_bin_with_the_windows_gain():
    """|X[k]| of A sin(2 pi k fs / N t) is A * a0 / 2 = 0.21 A: the spectrogram's dB at bin k."""
    k, amp = 40, 0.5
    t = np.arange(N) / RATE
    x = amp * np.sin(2 * np.pi * k * RATE / 2048 * t)
    spec = browser_fft_spectrogram(x)[0]
    assert spec.shape == (43, 232)
    assert (spec[1:].argmax(axis=1) == k).all()  # frame 0 is half zeros
    np.testing.assert_allclose(spec[1:, k], 20 * np.log10(0.21 * amp), atol=1e-3)


def test_frames_match_an_independent_stft():
    """Each frame equals scipy's FFT of the 2048 samples ending at 1024 (k + 1), windowed, / N."""
    from scipy.fft import fft

    x = np.random.default_rng(0).uniform(-1, 1, N)
    padded = np.concatenate([np.zeros(1024), x])
    w = get_window("blackman", 2048)
    want = np.stack(
        [
            20 * np.log10(np.abs(fft(padded[k * 1024 : k * 1024 + 2048] * w)[:232]) / 2048)
            for k in range(43)
        ]
    )
    np.testing.assert_allclose(browser_fft_spectrogram(x)[0], want, atol=2e-4)


def test_silence_is_floored_not_minus_infinity():
    """Digital silence gives -200 dB, a finite input (the browser would give -inf)."""
    spec = browser_fft_spectrogram(np.zeros(N))
    assert np.isfinite(spec).all() and np.allclose(spec, -200.0)


def test_normalize_is_speech_commands_z_score():
    """(x - mean) / (population std + 1e-7) over each whole spectrogram."""
    s = np.random.default_rng(1).normal(-60, 12, (3, 43, 232))
    z = normalize_spectrogram(s)
    np.testing.assert_allclose(z.mean(axis=(1, 2)), 0, atol=1e-5)
    np.testing.assert_allclose(z.std(axis=(1, 2)), 1, atol=1e-5)
    np.testing.assert_allclose(z[0], (s[0] - s[0].mean()) / (s[0].std() + 1e-7), rtol=1e-5)


@pytest.mark.parametrize(
    ("dtype", "scale"),
    [(np.int16, 32767), (np.int32, 2**31 - 1), (np.float32, 1.0)],
    ids=["pcm16", "pcm32", "float32"],
)
def test_pcm_and_float_files_scale_to_unit_range(tmp_path, dtype, scale):
    """Full-scale samples come back as +-1 (within one quantisation step)."""
    x = np.sin(np.linspace(0, 20, 2000))
    wavfile.write(tmp_path / "a.wav", RATE, (x * scale).astype(dtype))
    np.testing.assert_allclose(read_wav(tmp_path / "a.wav"), x, atol=1e-4)


def test_8_bit_unsigned_files(tmp_path):
    """8-bit WAVs are unsigned around 128."""
    x = np.sin(np.linspace(0, 20, 2000))
    wavfile.write(tmp_path / "a.wav", RATE, np.round(x * 127 + 128).astype(np.uint8))
    np.testing.assert_allclose(read_wav(tmp_path / "a.wav"), x, atol=1 / 64)


def test_24_bit_pcm(tmp_path):
    """24-bit PCM (three bytes a sample) reads at full precision."""
    x = np.sin(np.linspace(0, 20, 2000)) * 0.9
    np.testing.assert_allclose(read_wav(pcm24(tmp_path / "a.wav", RATE, x)), x, atol=1e-6)


def test_stereo_is_mixed_down_to_the_mean(tmp_path):
    """Web Audio's stereo-to-mono down-mix: 0.5 * (L + R)."""
    left, right = np.full(500, 0.5), np.full(500, -0.25)
    wavfile.write(tmp_path / "s.wav", RATE, np.stack([left, right], 1).astype(np.float32))
    np.testing.assert_allclose(read_wav(tmp_path / "s.wav"), 0.125, atol=1e-7)


def test_another_rate_is_resampled_and_keeps_its_pitch(tmp_path):
    """A 1 kHz tone at 16 kHz, resampled to 44.1 kHz: 2.75x the samples, still 1 kHz."""
    t = np.arange(16000) / 16000
    wavfile.write(
        tmp_path / "r.wav", 16000, (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    )
    y = read_wav(tmp_path / "r.wav")
    assert y.size == 44100
    peak = np.abs(np.fft.rfft(y[2000:-2000])).argmax() * RATE / (y.size - 4000)
    assert abs(peak - 1000) < 2


@pytest.mark.parametrize(
    "damage",
    ["header_cut", "data_cut", "not_wav", "empty"],
    ids=["header-cut", "data-cut-short", "not-a-wav", "empty-file"],
)
def test_damaged_files_are_one_clear_error(tmp_path, damage):
    """A truncated or foreign file is a DataError naming it, never a scipy traceback."""
    path = tmp_path / "bad.wav"
    wavfile.write(path, RATE, np.zeros(4000, np.int16))
    raw = path.read_bytes()
    path.write_bytes(
        {
            "header_cut": raw[:30],
            "data_cut": raw[:-1000],
            "not_wav": b"ID3" + raw[3:],
            "empty": b"",
        }[damage]
    )
    with pytest.raises(xai.errors.DataError, match="bad.wav"):
        read_wav(path)


def test_a_short_clip_is_refused_with_its_length():
    """Fewer than 44,032 samples: the lengths are named."""
    with pytest.raises(xai.errors.DataError, match=r"22050 samples .* hears 44032"):
        snippet(np.zeros(22050), "clip")
    assert snippet(np.arange(50000.0)).shape == (N,)


def test_bad_waveform_shapes_are_refused():
    """The spectrogram names the expected shape."""
    with pytest.raises(xai.errors.ValidationError, match=r"\(n, 44032\)"):
        browser_fft_spectrogram(np.zeros((2, 100)))


def test_mangled_headers_give_samples_or_one_data_error():
    """200 WAV headers with random bytes changed: finite samples in [-1, 1], or a DataError."""
    import io

    buf = io.BytesIO()
    wavfile.write(buf, RATE, (np.sin(np.arange(4000) / 5) * 20000).astype(np.int16))
    raw = buf.getvalue()
    rng = np.random.default_rng(0)
    for _ in range(200):
        data = bytearray(raw)
        for i in rng.integers(0, 44, 3):
            data[i] = rng.integers(0, 256)
        try:
            y = read_wav(bytes(data))
        except xai.errors.DataError:
            continue
        assert np.isfinite(y).all() and np.abs(y).max() <= 1.0 + 1e-9


def test_an_absurd_sample_rate_is_refused_before_resampling(tmp_path):
    """A header declaring 3 Hz would resample one file into gigabytes: refused, named."""
    path = tmp_path / "slow.wav"
    wavfile.write(path, RATE, np.zeros(4000, np.int16))
    raw = bytearray(path.read_bytes())
    struct.pack_into("<II", raw, 24, 3, 6)  # sample rate, byte rate (2 bytes a frame)
    path.write_bytes(bytes(raw))
    with pytest.raises(xai.errors.DataError, match="3 Hz"):
        read_wav(path)
