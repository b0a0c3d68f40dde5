"""Hostile image folders and images: scaled by their real range, or one clear error.

``FOLDER_CASES`` is one row per hostile class folder for
:func:`xai_datasets.load_image_folder`: what to write into the class folder ``a``, the
loader's options, and the expected rows (for 4 x 4 images read at their own size, so the
values are exact) or the error class and words its message must hold. ``PREPARE_CASES``
does the same for :func:`xai_core.importers.teachable.prepare_images` (arrays, PIL images
and files). A FIFO must be refused, not waited on: each case runs under an alarm.
(The project reads no audio folders yet; there is nothing to test there.)
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from xai_core.errors import DataError, ResourceError, ValidationError
from xai_core.importers.teachable import prepare_images
from xai_datasets import load_image_folder

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the file builders
from model_files import png_header  # noqa: E402

RAMP16 = (np.arange(16).reshape(4, 4) * 4369).astype(np.uint16)  # 0 .. 65535
RAMP8 = (np.arange(16).reshape(4, 4) * 17).astype(np.uint8)  # 0 .. 255
GREY16 = RAMP16.ravel() / 65535.0


def _save(image: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt)
    return buf.getvalue()


def _file(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def _fifo(name: str) -> Callable[[Path], None]:
    return lambda d: os.mkfifo(d / name)


def _rgb(grey: np.ndarray) -> np.ndarray:
    return np.repeat(grey.reshape(-1, 1), 3, axis=1).ravel()


def _palette() -> Image.Image:
    image = Image.new("P", (4, 4), 1)
    image.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    return image


PNG16 = _save(Image.fromarray(RAMP16), "PNG")
F_IMAGE = (RAMP16 / 65535.0).astype(np.float32)

#: name -> (write into the class folder, options, expected rows or (error, *words))
# fmt: off
FOLDER_CASES: dict[str, tuple[Callable[[Path], None], dict, object]] = {
    "png8-rgb": (_file("x.png", _save(Image.new("RGB", (4, 4), (200, 100, 50)), "PNG")), {}, np.tile([200 / 255, 100 / 255, 50 / 255], 16)),
    "png16-ramp-grey": (_file("x.png", PNG16), {"color": False}, GREY16),
    "png16-ramp-rgb": (_file("x.png", PNG16), {}, _rgb(GREY16)),
    "tiff-I16B-named-png": (_file("x.png", _save(Image.fromarray(RAMP16.astype(">u2")), "TIFF")), {"color": False}, GREY16),
    "tiff-I-in-range": (_file("x.png", _save(Image.fromarray(RAMP16.astype(np.int32)), "TIFF")), {"color": False}, GREY16),
    "tiff-F-fractions": (_file("x.png", _save(Image.fromarray(F_IMAGE), "TIFF")), {"color": False}, GREY16),
    "png-LA-alpha-dropped": (_file("x.png", _save(Image.new("LA", (4, 4), (100, 50)), "PNG")), {"color": False}, np.full(16, 100 / 255)),
    "png-RGBA-alpha-dropped": (_file("x.png", _save(Image.new("RGBA", (4, 4), (10, 20, 30, 0)), "PNG")), {}, np.tile([10 / 255, 20 / 255, 30 / 255], 16)),
    "png-palette": (_file("x.png", _save(_palette(), "PNG")), {}, np.tile([10 / 255, 20 / 255, 30 / 255], 16)),
    "png-bilevel": (_file("x.png", _save(Image.new("1", (4, 4), 1), "PNG")), {"color": False}, np.ones(16)),
    "tiff-CMYK": (_file("x.png", _save(Image.new("CMYK", (4, 4), (0, 255, 255, 0)), "TIFF")), {}, np.tile([1.0, 0.0, 0.0], 16)),
    "tiff-I-out-of-range": (_file("x.png", _save(Image.fromarray(np.full((4, 4), 70000, np.int32)), "TIFF")), {}, (DataError, "x.png", "mode I", "70000")),
    "tiff-F-out-of-range": (_file("x.png", _save(Image.fromarray(np.full((4, 4), 2.0, np.float32)), "TIFF")), {}, (DataError, "x.png", "mode F", "[0, 1]")),
    "tiff-F-nan": (_file("x.png", _save(Image.fromarray(np.full((4, 4), np.nan, np.float32)), "TIFF")), {}, (DataError, "x.png", "mode F")),
    "tiff-LAB": (_file("x.png", _save(Image.new("LAB", (4, 4)), "TIFF")), {}, (DataError, "x.png", "'LAB'")),
    "fifo-named-png": (_fifo("x.png"), {}, (DataError, "x.png", "FIFO")),
    "folder-named-png": (lambda d: (d / "x.png").mkdir(), {}, (DataError, "x.png", "folder")),
    "decompression-bomb-20000": (_file("x.png", png_header(20000, 20000)), {}, (DataError, "x.png", "decompression bomb", "MAX_IMAGE_PIXELS")),
    "decompression-bomb-10000": (_file("x.png", png_header(10000, 10000)), {}, (DataError, "x.png", "decompression bomb")),
    "truncated-png": (_file("x.png", PNG16[: len(PNG16) // 2]), {}, (DataError, "x.png", "not a readable image")),
    "empty-png": (_file("x.png", b""), {}, (DataError, "x.png", "not a readable image")),
    "classes-twice": (_file("x.png", PNG16), {"classes": ["a", "a"]}, (ValidationError, "classes", "'a'", "more than once")),
    "classes-a-string": (_file("x.png", PNG16), {"classes": "a"}, (ValidationError, "classes must be a sequence")),
    "classes-unknown": (_file("x.png", PNG16), {"classes": ["b"]}, (DataError, "['b'] not found")),
    "image-size-10**6": (_file("x.png", PNG16), {"image_size": 10**6}, (ResourceError, "load_image_folder", "Lower image_size")),
    "image-size-2.5": (_file("x.png", PNG16), {"image_size": 2.5}, (ValidationError, "image_size", "2.5")),
    "image-size-zero": (_file("x.png", PNG16), {"image_size": (0, 4)}, (ValidationError, "image_size")),
    "image-size-true": (_file("x.png", PNG16), {"image_size": True}, (ValidationError, "image_size")),
}
# fmt: on


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    """A generous bound on a case that would otherwise block forever (a FIFO opened)."""

    def hung(*_: object) -> None:
        raise TimeoutError("the reader blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("case", list(FOLDER_CASES), ids=list(FOLDER_CASES))
def test_hostile_image_folder(tmp_path: Path, case: str) -> None:
    """Each folder loads to the exact pixels scaled by their range, or one clear error."""
    write, options, expect = FOLDER_CASES[case]
    (tmp_path / "a").mkdir()
    write(tmp_path / "a")
    options = {"image_size": 4, **options}
    if isinstance(expect, tuple):
        error, *words = expect
        with pytest.raises(error) as info:
            load_image_folder(tmp_path, **options)
        for word in words:
            assert word in str(info.value), (word, str(info.value))
    else:
        ds = load_image_folder(tmp_path, **options)
        assert ds.X.shape == (1, np.size(expect)) and ds.class_names == ("a",)
        np.testing.assert_allclose(ds.X[0], expect, atol=1e-6)


def _model(**prep: object) -> SimpleNamespace:
    base = {"image_size": (4, 4), "channels": 1, "scale": 1 / 127.5, "offset": -1.0}
    return SimpleNamespace(preprocessing={**base, **prep})


def _path(name: str, data: bytes | None) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        if data is None:
            os.mkfifo(tmp / name)
        elif data != b"-":
            (tmp / name).write_bytes(data)
        return tmp / name

    return make


def _with(value: object, at: tuple[int, int], array: np.ndarray) -> np.ndarray:
    out = array.copy()
    out[at] = value
    return out


TM8 = RAMP8.astype(np.float32) / np.float32(127.5) - np.float32(1.0)
TM16 = (RAMP16 / 65535.0 * 255.0).astype(np.float32) / np.float32(127.5) - np.float32(1.0)
FLOATS = RAMP8 / 255.0

#: name -> (make the image from tmp, preprocessing changes, expected (4, 4) output or error)
# fmt: off
PREPARE_CASES: dict[str, tuple[Callable[[Path], object], dict, object]] = {
    "uint8-array": (lambda t: RAMP8, {}, TM8),
    "int64-array-in-range": (lambda t: RAMP8.astype(np.int64), {}, TM8),
    "float-fractions": (lambda t: FLOATS, {}, TM8),
    "float32-fractions-with-channel": (lambda t: FLOATS.astype(np.float32)[:, :, None], {}, TM8),
    "png16-file": (_path("x.png", PNG16), {}, TM16),
    "pil-I16-image": (lambda t: Image.fromarray(RAMP16), {}, TM16),
    "float-minus-5-and-300": (lambda t: _with(300.0, (1, 1), _with(-5.0, (0, 0), FLOATS)), {}, (ValidationError, "images[0]", "fractions in [0, 1]", "-5 .. 300")),
    "float-0-to-255": (lambda t: RAMP8.astype(np.float64), {}, (ValidationError, "images[0]", "fractions in [0, 1]", "uint8")),
    "int-minus-5-and-300": (lambda t: _with(300, (1, 1), _with(-5, (0, 0), RAMP8.astype(np.int64))), {}, (ValidationError, "images[0]", "0..255", "-5 .. 300")),
    "uint16-array": (lambda t: RAMP16, {}, (ValidationError, "images[0]", "0..255", "65535")),
    "float-nan": (lambda t: _with(np.nan, (0, 0), FLOATS), {}, (ValidationError, "images[0]", "fractions")),
    "bool-array": (lambda t: RAMP8 > 100, {}, (ValidationError, "images[0]", "must hold numbers", "bool")),
    "five-channels": (lambda t: np.zeros((4, 4, 5), np.uint8), {}, (ValidationError, "images[0]", "(4, 4, 5)")),
    "empty-array": (lambda t: np.zeros((0, 4), np.uint8), {}, (ValidationError, "images[0]", "(0, 4)")),
    "bomb-file-30000": (_path("x.png", png_header(30000, 30000)), {}, (DataError, "images[0]", "x.png", "decompression bomb")),
    "fifo-file": (_path("x.png", None), {}, (DataError, "images[0]", "x.png", "FIFO")),
    "missing-file": (_path("x.png", b"-"), {}, (DataError, "images[0]", "does not exist")),
    "not-an-image": (_path("x.png", b"hello"), {}, (DataError, "images[0]", "not a readable image")),
    "image-size-10**6": (lambda t: RAMP8, {"image_size": (10**6, 10**6)}, (ResourceError, "prepare_images")),
    "image-size-zero": (lambda t: RAMP8, {"image_size": (0, 4)}, (ValidationError, "image_size")),
}
# fmt: on


@pytest.mark.parametrize("case", list(PREPARE_CASES), ids=list(PREPARE_CASES))
def test_hostile_prepare_images(tmp_path: Path, case: str) -> None:
    """Arrays are never wrapped around; files are scaled by their range; bad input is one error."""
    make, prep, expect = PREPARE_CASES[case]
    item = make(tmp_path)
    model = _model(**prep)
    if isinstance(expect, tuple):
        error, *words = expect
        with pytest.raises(error) as info:
            prepare_images(model, [item])
        for word in words:
            assert word in str(info.value), (word, str(info.value))
    else:
        out = prepare_images(model, [item])
        assert out.shape == (1, 4, 4, 1) and out.dtype == np.float32
        np.testing.assert_allclose(out[0, :, :, 0], expect, atol=1e-5)


def test_prepare_images_without_preprocessing_is_refused() -> None:
    """A model that was not loaded from Teachable Machine has no recorded preprocessing."""
    with pytest.raises(ValidationError, match="no recorded image preprocessing"):
        prepare_images(SimpleNamespace(), [RAMP8])
